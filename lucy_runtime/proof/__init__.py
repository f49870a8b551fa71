"""The grader's proof: tamper cases, `verify-grader` through real nbgrader, the mutation score and each case's failing rows."""
