# tool_choice "required" / a named function: the call grammar and its
# byte-at-a-time validator (src/grammar/call_grammar.c, call_grammar_xml.c),
# checked against the reply parser (src/reply/parse.c); Qwen3-Coder
# bodies also along random valid walks (an oracle: whole replies parse into
# schema-valid arguments, no dead ends).
st_add_check_test(call_grammar SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_call_grammar.c LIBS st_grammar)
