# response_format json_schema: the schema compiler and the byte-at-a-time
# validator (src/grammar/schema/).
st_add_check_test(json_schema SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_schema.c LIBS st_grammar)
