" .mscl files are msclc collective-communication programs.
autocmd BufNewFile,BufRead *.mscl setfiletype mscl
