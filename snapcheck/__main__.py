from snapcheck.entry import console

console()
