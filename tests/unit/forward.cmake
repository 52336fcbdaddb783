# The model's layer program: the optimized forward against a naive scalar
# reference at every weight type (forward_ref), and its batching rules
# (forward: batch invariance, chunking, errors).
st_add_check_test(forward_ref SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_forward_ref.c
                  ${CMAKE_CURRENT_LIST_DIR}/forward_ref.c LIBS st_model m TIMEOUT 600)
