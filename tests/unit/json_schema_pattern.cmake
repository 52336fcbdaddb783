# response_format json_schema: "pattern" / "format" (src/grammar/regex/,
# grammar/schema/pattern.c, grammar/schema/pstr.c).
st_add_check_test(json_schema_pattern SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_schema_pattern.c
                  LIBS st_grammar SLOW_CASES TIMEOUT 300)
