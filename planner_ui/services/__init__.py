"""The only code that writes the database. Views, tasks and commands call these."""
