# The MTP (nextn) layer of a glm4moe file (make-model's glm-tiny): drafts
# and verified rows against the naive reference, greedy identity.
st_add_check_test(mtp_glm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mtp_glm.c
                  ${CMAKE_CURRENT_LIST_DIR}/forward_ref.c ${CMAKE_CURRENT_LIST_DIR}/forward_ref_next.c LIBS st_model m TIMEOUT 600)
