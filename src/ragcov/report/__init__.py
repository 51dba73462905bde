"""Reporters: text and markdown tables, the total, versioned JSON, and the HTML site."""
