" Buffer settings for .mscl files: comments as msclc reads them (`//` to
" the end of the line; there are no block comments), and the indentation
" `msclc fmt` writes (four spaces).
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1
setlocal commentstring=//\ %s comments=://
setlocal expandtab shiftwidth=4 softtabstop=4
let b:undo_ftplugin = "setlocal commentstring< comments< expandtab< shiftwidth< softtabstop<"
