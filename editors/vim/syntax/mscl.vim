" Vim syntax file for .mscl (msclc collective-communication programs).
" Install: see editors/README.md.

if exists("b:current_syntax")
  finish
endif

syn keyword msclKeyword param program import fn let pipeline
syn keyword msclControl for in where if else return
syn keyword msclBoolean true false
syn keyword msclConstant Simple LL none before after both sum input output scratch interleaved
syn match msclConstant "\(:\s*\)\@<=\<\(min\|max\)\>\(\s*(\)\@!"
syn match msclCollective "\<\(allgather\|allreduce\|reducescatter\|alltoall\|sendrecv\|test_collective\)\>\(\s*(\)\@="
syn match msclChannel "\<\(memory_channel\|port_channel\|switch_channel\)\>\(\s*(\)\@="
syn match msclBuiltin "\<\(rank\|scratch\|tb_group\|semaphore\|len\|assert\|min\|max\|str\)\>\(\s*(\)\@="
syn match msclOperation "\.\@<=\<\(copy\|copy_packets\|unpack_packets\|reduce\|barrier\|signal\|wait\|put\|get\|put_packets\|read_put_packets\|flush\|put_with_signal\|put_with_signal_and_flush\|at_rank\|broadcast\|broadcast_packets\|acquire\|release\)\>"
syn match msclOption "^\s*\zs\(collective\|num_ranks\|instances\|protocol\|instr_fusion\|auto_sync\|replication_policy\|reuse_resources\|num_threads_per_block\|use_double_scratch_buffer\|buffer_alignment\|min_message_size\|max_message_size\)\ze\s*="
syn match msclParamName "\(\<param\s\+\)\@<=\h\w*"
syn match msclFunctionName "\(\<fn\s\+\)\@<=\h\w*"
syn keyword msclType int bool str
syn match msclNumber "\<\(0[xX][0-9a-fA-F_]\+\|\d[0-9_]*\)\>"
syn region msclString start=+"+ skip=+\\.+ end=+"+ contains=msclEscape
syn match msclEscape "\\." contained
syn match msclComment "//.*$" contains=@Spell

hi def link msclKeyword Keyword
hi def link msclControl Conditional
hi def link msclBoolean Boolean
hi def link msclConstant Constant
hi def link msclCollective Function
hi def link msclChannel Type
hi def link msclBuiltin Function
hi def link msclOperation Function
hi def link msclOption Identifier
hi def link msclParamName Identifier
hi def link msclFunctionName Function
hi def link msclType Type
hi def link msclNumber Number
hi def link msclString String
hi def link msclEscape SpecialChar
hi def link msclComment Comment

let b:current_syntax = "mscl"
