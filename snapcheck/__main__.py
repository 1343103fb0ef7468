from snapcheck.cli import console

console()
