# response_format json_schema: "pattern" / "format" (src/text/json_regex*.c,
# json_schema_pattern.c, json_schema_pstr.c).
st_add_check_test(json_schema_pattern SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_schema_pattern.c
                  LIBS st_grammar)
