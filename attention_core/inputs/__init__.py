"""What every page starts from: the worked examples (``presets``), sentences as tokens and ids with their
vocabulary (``tokens``), and matrices pasted as text (``matrix_text``, parsed without eval or sympify)."""
