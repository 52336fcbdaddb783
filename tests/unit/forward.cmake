# The model's layer program: the optimized forward against a naive scalar
# reference at every weight type (forward_ref), and its batching rules
# (forward: batch invariance, chunking, errors).
st_add_check_test(forward_ref SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_forward_ref.c
                  ${CMAKE_CURRENT_LIST_DIR}/forward_ref.c ${CMAKE_CURRENT_LIST_DIR}/forward_ref_next.c LIBS st_model m TIMEOUT 600)
st_add_check_test(forward SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_forward.c
                  ${CMAKE_CURRENT_LIST_DIR}/forward_ref.c ${CMAKE_CURRENT_LIST_DIR}/forward_ref_next.c LIBS st_model m)
# The model runner (src/runner): text side from the GGUF, forward through
# the runner API. It reaches src/runner/runner.h.
st_add_check_test(runner_model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_runner_model.c
                  LIBS st_engine m)
target_include_directories(test_runner_model PRIVATE ${PROJECT_SOURCE_DIR}/src)
# A slot's prompt cache to a file and back (src/model/slot_state.c).
st_add_check_test(slot_state SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_slot_state.c
                  LIBS st_engine m)
target_include_directories(test_slot_state PRIVATE ${PROJECT_SOURCE_DIR}/src)
# The engine pool on the CPU model runner: greedy through the pool = the
# runner's argmax loop; -np 4 gives each request its solo tokens.
st_add_check_test(engine_model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_model.c
                  LIBS st_engine)
target_include_directories(test_engine_model PRIVATE ${PROJECT_SOURCE_DIR}/src)
# qwen35moe (Gated DeltaNet + gated attention): against the reference,
# the recurrent state's rules, refused files.
st_add_check_test(forward_next SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_forward_next.c
                  ${CMAKE_CURRENT_LIST_DIR}/forward_ref.c ${CMAKE_CURRENT_LIST_DIR}/forward_ref_next.c
                  LIBS st_model m TIMEOUT 300)
# The KV cache types (f16, q8_0) at the model level: agreement of the two,
# bytes, refusals, slot files of one type restored by the other.
st_add_check_test(kv_types SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kv_types.c
                  LIBS st_engine m TIMEOUT 300)
target_include_directories(test_kv_types PRIVATE ${PROJECT_SOURCE_DIR}/src)
