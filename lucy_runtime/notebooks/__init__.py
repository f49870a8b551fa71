"""nbgrader's model of a notebook: which cell is which, reading notebooks and their Markdown pairs, and the chapter's units."""
