# The think block before a constrained answer (src/grammar/think_block.c):
# byte by byte, with a JSON document after it.
st_add_check_test(think_block SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_think_block.c LIBS st_grammar)
