" Buffer settings for .mscl files: comments as msclc reads them (`//` to
" the end of the line; there are no block comments), the indentation
" `msclc fmt` writes (four spaces, one level more inside each `{`), and
" :MsclFmt, which formats the buffer with `msclc fmt`.
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1
setlocal commentstring=//\ %s comments=://
setlocal expandtab shiftwidth=4 softtabstop=4 autoindent smartindent
command! -buffer MsclFmt call s:format()
let b:undo_ftplugin = "setlocal commentstring< comments< expandtab< shiftwidth< softtabstop< autoindent< smartindent<"
      \ . " | delcommand MsclFmt"

" The whole buffer through `msclc fmt -` (g:msclc names the command, else
" `msclc` on the PATH). Where msclc finds an error the buffer stays as it
" was and the diagnostic is shown: a filter (`:%!msclc fmt -`) would put
" the diagnostic in the buffer instead.
if exists("*s:format")
  finish
endif
function s:format() abort
  let command = shellescape(get(g:, 'msclc', 'msclc')) . ' fmt -'
  let formatted = systemlist(command, getline(1, '$'))
  if v:shell_error
    echohl ErrorMsg
    echomsg 'msclc fmt: ' . join(formatted, "\n")
    echohl None
    return
  endif
  if formatted ==# getline(1, '$')
    return
  endif
  let view = winsaveview()
  call setline(1, formatted)
  if line('$') > len(formatted)
    silent execute (len(formatted) + 1) . ',$delete _'
  endif
  call winrestview(view)
endfunction
