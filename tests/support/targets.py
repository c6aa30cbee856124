"""The issue's three-target project (a CPU laptop, an A100 on 535.104.05, an H100 on 580.65.06), as
the configuration, lock and init tests write it."""

THREE_TARGET_TABLES = """[frameworks]
torch = ">=2.6"

[targets.laptop]
gpus = "none"

[targets.a100]
driver = "535.104.05"
gpus = ["A100"]

[targets.h100]
driver = "580.65.06"
gpus = ["H100"]
"""

THREE_TARGETS = '[project]\nname = "demo"\n\n' + THREE_TARGET_TABLES
