# Fill-in-the-middle prompts through the engine (src/engine/infill.c): the
# exact ids on a make-model file's real tokenizer (its GGUF FIM keys), the
# budget on its context, a --no-fim model refused, and the sim's FIM ids.
st_add_check_test(engine_infill SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_infill.c
                  LIBS st_engine m TIMEOUT 120)
