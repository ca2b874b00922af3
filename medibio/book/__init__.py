"""The book: execute the chapter notebooks with papermill and render them with jupyter-book 1.x."""
