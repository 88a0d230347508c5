"""Read queries for pages and APIs; every one is scoped to a user."""
