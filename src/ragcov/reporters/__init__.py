"""Reporters: text and markdown tables, the total, versioned JSON, and the HTML site."""

# Where the JSON report and the HTML site go unless told otherwise (CLI and pytest plugin).
DEFAULT_JSON_FILE = "ragcov.json"
DEFAULT_HTML_DIR = "ragcov-html"
