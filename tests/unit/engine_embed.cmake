# Embedding requests (params.embed): the model's hidden row against the
# scalar reference, through the engine on the tiny model (chunks, cached
# prefix, mixed with generation) and on the sim runner.
st_add_check_test(engine_embed SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_embed.c
                  ${CMAKE_CURRENT_LIST_DIR}/forward_ref.c ${CMAKE_CURRENT_LIST_DIR}/forward_ref_next.c LIBS st_engine m)
target_include_directories(test_engine_embed PRIVATE ${PROJECT_SOURCE_DIR}/src)
