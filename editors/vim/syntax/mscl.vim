" Vim syntax file for .mscl (msclc collective-communication programs).
" Install: see editors/README.md.

if exists("b:current_syntax")
  finish
endif

" `param` and `fn` open the regions below (a keyword would win over them).
syn keyword msclKeyword program import let pipeline
syn keyword msclControl for in where if else return
syn keyword msclBoolean true false
" Named constants, not where a call follows (`scratch(0, 4)` is the
" builtin) nor after a `.` (`rank(0).input` is a field): matches, as a
" keyword would win over the builtin's match.
syn match msclConstant "\.\@<!\<\(Simple\|LL\|none\|before\|after\|both\|sum\|input\|output\|scratch\|interleaved\|min\|max\)\>\(\s*(\)\@!"
syn match msclCollective "\<\(allgather\|allreduce\|reducescatter\|alltoall\|sendrecv\|test_collective\)\>\(\s*(\)\@="
syn match msclChannel "\<\(memory_channel\|port_channel\|switch_channel\)\>\(\s*(\)\@="
syn match msclBuiltin "\<\(rank\|scratch\|tb_group\|semaphore\|len\|assert\|min\|max\|str\)\>\(\s*(\)\@="
syn match msclOperation "\.\@<=\<\(copy\|copy_packets\|unpack_packets\|reduce\|barrier\|signal\|wait\|put\|get\|put_packets\|read_put_packets\|flush\|put_with_signal\|put_with_signal_and_flush\|at_rank\|broadcast\|broadcast_packets\|acquire\|release\)\>"
" A field of a value: after its `.`.
syn match msclField "\.\@<=\<\(input\|output\|id\|size\|rank\|index\|src_rank\|dst_rank\|tb_list\)\>\(\s*(\)\@!"
syn match msclOption "\(^\|[{,;]\)\s*\zs\(collective\|num_ranks\|instances\|protocol\|instr_fusion\|auto_sync\|replication_policy\|reuse_resources\|num_threads_per_block\|use_double_scratch_buffer\|buffer_alignment\|min_message_size\|max_message_size\)\ze\s*=\(=\)\@!"
" Types are written in a param's declaration (up to its `= DEFAULT`) and a
" function's signature (up to its body's `{`), and only there: elsewhere
" `chunk` or `tb_group` is a variable or a keyword argument's name.
syn region msclParamDecl matchgroup=msclKeyword start="\<\(param\)\>" end="\ze=\|$" contains=msclParamName,msclType,msclControl,msclNumber,msclConstant,msclString,msclComment,msclBoolean
syn region msclSignature matchgroup=msclKeyword start="\<\(fn\)\>" end="\ze{" contains=msclFunctionName,msclType,msclControl,msclNumber,msclConstant,msclString,msclComment,msclBoolean,msclBuiltin,msclCollective,msclChannel
syn match msclParamName "\(\<param\s\+\)\@<=\h\w*" contained
syn match msclFunctionName "\(\<fn\s\+\)\@<=\h\w*" contained
syn match msclType "\<\(int\|bool\|str\|range\|list\|map\|rank\|buffer\|chunk\|memory_channel\|port_channel\|switch_channel\|switch_view\|tb_group\|semaphore\|collective\|protocol\|sync_type\|reduce_op\|buffer_type\|replication_policy\)\>\(\s*[(:]\)\@!" contained
syn match msclNumber "\<\(0[xX][0-9a-fA-F_]\+\|\d[0-9_]*\)\>"
" A string ends at its line's end, as msclc reads it; only \n, \t, \\ and
" \" are escapes.
syn region msclString start=+"+ skip=+\\.+ end=+"+ end=+$+ contains=msclBadEscape,msclEscape
syn match msclBadEscape "\\." contained
syn match msclEscape "\\[nt\\"]" contained
syn match msclComment "//.*$" contains=@Spell

hi def link msclKeyword Keyword
hi def link msclControl Conditional
hi def link msclBoolean Boolean
hi def link msclConstant Constant
hi def link msclCollective Function
hi def link msclChannel Type
hi def link msclBuiltin Function
hi def link msclOperation Function
hi def link msclField Identifier
hi def link msclOption Identifier
hi def link msclParamName Identifier
hi def link msclFunctionName Function
hi def link msclType Type
hi def link msclNumber Number
hi def link msclString String
hi def link msclEscape SpecialChar
hi def link msclBadEscape Error
hi def link msclComment Comment

let b:current_syntax = "mscl"
