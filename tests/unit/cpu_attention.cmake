# The tiled CPU attention (prompt blocks, split decode) against a plain
# double-precision attention written in the test, at the head dims and GQA
# ratios of our presets; run twice: AVX2 (when the CPU has it) and scalar.
st_add_check_test(cpu_attention SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_attention.c
                  LIBS st_backend m TIMEOUT 300 COST 50)
add_test(NAME cpu_attention_scalar COMMAND test_cpu_attention)
set_tests_properties(cpu_attention_scalar PROPERTIES LABELS unit TIMEOUT 300 COST 80
    ENVIRONMENT "STRATA_CPU_ISA=scalar;CK_DEFAULT_TIMEOUT=300")
