"""The resolver: pure functions from (Matrix, Project constraints, Host) to a Stack or a Conflict."""
