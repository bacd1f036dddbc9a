from capstan.cli import main

main()
