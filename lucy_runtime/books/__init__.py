"""The books: the Solutions Book from source/, the chapter as a website, and the rows each teaching block grades."""
