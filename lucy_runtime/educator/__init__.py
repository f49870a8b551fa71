"""What the grader is proved against: known-bad cases, correct alternatives, and the class's predictions read by a rule."""
