" Headless check of syntax/mscl.vim:
"   vim -Es -N -u NONE -i NONE -S editors/vim/test.vim
" Loads the syntax test file, checks the buffer settings and the highlight
" group of one token of each kind; exits non-zero (with the reasons on stdout) on any mismatch or
" error while loading.
set rtp^=editors/vim
filetype plugin on
syntax on
edit editors/vscode/tests/syntax.test.mscl
let s:failures = []
if &filetype !=# 'mscl' || get(b:, 'current_syntax', '') !=# 'mscl'
  call add(s:failures, 'the mscl filetype or syntax did not load')
endif
" The buffer settings of ftplugin/mscl.vim: comments msclc reads, and the
" indentation `msclc fmt` writes.
if &commentstring !=# '// %s' || &shiftwidth != 4 || !&expandtab
  call add(s:failures, printf('ftplugin: commentstring %s, shiftwidth %d, expandtab %d', &commentstring, &shiftwidth, &expandtab))
endif
" [pattern to search, offset into the match, expected group]
let s:cases = [
      \ ['^import', 0, 'msclKeyword'],
      \ ['^param num_gpus', 6, 'msclParamName'],
      \ [': int', 2, 'msclType'],
      \ ['= 8', 2, 'msclNumber'],
      \ ['"ring', 0, 'msclString'],
      \ ['\\n', 0, 'msclEscape'],
      \ ['^param tbg', 6, 'msclParamName'],
      \ ['int in \[', 4, 'msclControl'],
      \ ['in \[1', 4, 'msclNumber'],
      \ ['^program', 0, 'msclKeyword'],
      \ ['^    collective', 4, 'msclOption'],
      \ ['allreduce(', 0, 'msclCollective'],
      \ ['inplace: true', 9, 'msclBoolean'],
      \ ['= LL', 2, 'msclConstant'],
      \ ['^fn peer_of', 3, 'msclFunctionName'],
      \ ['^    return', 4, 'msclControl'],
      \ ['memory_channel(', 0, 'msclChannel'],
      \ ['^for', 0, 'msclControl'],
      \ ['where', 0, 'msclControl'],
      \ ['ch.put(', 3, 'msclOperation'],
      \ ['put(rank(', 4, 'msclBuiltin'],
      \ ['before', 0, 'msclConstant'],
      \ ['reduce_op: max', 11, 'msclConstant'],
      \ ['^pipeline', 0, 'msclKeyword'],
      \ ['^// SYNTAX', 0, 'msclComment'],
      \ ['tb_group: g)', 0, ''],
      \ ['reduce_op: sum', 0, ''],
      \ ['c: chunk', 3, 'msclType'],
      \ ['reduce_op = max', 12, 'msclConstant'],
      \ ['-> (chunk', 4, 'msclType'],
      \ ['pick(chunk', 5, ''],
      \ ['str(3)', 0, 'msclBuiltin'],
      \ ['\[scratch(', 1, 'msclBuiltin'],
      \ ['"\\q', 1, 'msclBadEscape'],
      \ ['^let after', 0, 'msclKeyword'],
      \ [', protocol = LL', 2, 'msclOption'],
      \ ['; instances', 2, 'msclOption'],
      \ ['"c"\]', 1, 'msclString'],
      \ ['\] = "a=b"', 4, 'msclString'],
      \ ['(0).input.size', 4, 'msclField'],
      \ ['input.size', 6, 'msclField'],
      \ ]
for [s:pattern, s:offset, s:group] in s:cases
  call cursor(1, 1)
  let s:at = searchpos(s:pattern, 'cW')
  if s:at == [0, 0]
    call add(s:failures, 'pattern not found: ' . s:pattern)
    continue
  endif
  let s:name = synIDattr(synID(s:at[0], s:at[1] + s:offset, 1), 'name')
  if s:name !=# s:group
    call add(s:failures, printf('%s (line %d): %s, expected %s', s:pattern, s:at[0], s:name, s:group))
  endif
endfor
if v:errmsg !=# ''
  call add(s:failures, 'error: ' . v:errmsg)
endif
" :MsclFmt, where a msclc is built here: the buffer formatted as `msclc
" fmt` formats it; where msclc finds an error, the buffer left as it was.
let s:built = filter(['target/debug/msclc', 'target/release/msclc'], 'executable(v:val)')
if !empty(s:built)
  let g:msclc = s:built[0]
  enew
  setfiletype mscl
  call setline(1, ['let  x=1', 'for i in 0..2 {', 'let y = i', '}'])
  MsclFmt
  if getline(1, '$') !=# ['let x = 1', 'for i in 0..2 {', '    let y = i', '}']
    call add(s:failures, 'MsclFmt: ' . string(getline(1, '$')))
  endif
  call setline(1, ['let  x=', 'for i in 0..2 {'])
  silent! MsclFmt
  if getline(1, 2) !=# ['let  x=', 'for i in 0..2 {']
    call add(s:failures, 'MsclFmt changed a buffer with an error: ' . string(getline(1, '$')))
  endif
  let v:errmsg = ''
else
  echo 'MsclFmt not tested: no msclc built in target/'
endif
if empty(s:failures)
  qa!
endif
call writefile(s:failures, '/dev/stderr')
cq
