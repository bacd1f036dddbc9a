from capstan.cli.launch import main

main()
