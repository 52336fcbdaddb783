# GBNF grammars (the `grammar` request field): the parser, its errors and
# the byte-at-a-time recognizer (src/grammar/gbnf/).
st_add_check_test(gbnf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gbnf.c LIBS st_grammar)
