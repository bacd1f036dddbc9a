from capstan.launch import main

main()
