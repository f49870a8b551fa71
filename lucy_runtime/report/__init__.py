"""The class report: what the class did, read from what grading left behind, as HTML and CSV."""
