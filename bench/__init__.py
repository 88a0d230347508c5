"""`make bench`: parallel scheduling measured on the real stack; see bench.__main__."""
