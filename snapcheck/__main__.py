from snapcheck.cli import main

main()
