"""The ground floor every layer may use: the per-user cache directory and its trust rule
(``cache``), where the shipped data lives (``resources``) and the syntax of image
references (``references``). Nothing here knows about stacks, projects or engines."""
