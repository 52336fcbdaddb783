# libFuzzer targets (clang only, -DSTRATA_FUZZ=ON). The reader's sources (and
# the two backend files the model description needs) are compiled into the
# target itself with coverage instrumentation; only st_util is linked, so
# the target does not depend on the rest of the backend.
# ctest runs each target for ~20 s from the committed seed corpus, writing
# new inputs to a scratch corpus in the build tree (label "fuzz").
if(STRATA_FUZZ)
    if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
        message(FATAL_ERROR "STRATA_FUZZ needs clang (cmake -DCMAKE_C_COMPILER=clang)")
    endif()
    add_executable(fuzz_gguf ${CMAKE_CURRENT_LIST_DIR}/fuzz_gguf.c
                   ${PROJECT_SOURCE_DIR}/src/model/gguf.c
                   ${PROJECT_SOURCE_DIR}/src/model/gguf_get.c
                   ${PROJECT_SOURCE_DIR}/src/model/ggml_types.c
                   ${PROJECT_SOURCE_DIR}/src/model/model_desc.c
                   ${PROJECT_SOURCE_DIR}/src/model/model_desc_hybrid.c
                   ${PROJECT_SOURCE_DIR}/src/model/desc_keys.c
                   ${PROJECT_SOURCE_DIR}/src/backend/base/quant_ref.c
                   ${PROJECT_SOURCE_DIR}/src/backend/base/quant_tables.c)
    target_include_directories(fuzz_gguf PRIVATE ${PROJECT_SOURCE_DIR}/src/model)
    target_compile_options(fuzz_gguf PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=undefined)
    target_link_options(fuzz_gguf PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_gguf PRIVATE st_util st_warnings)
    set(ST_FUZZ_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz_gguf_corpus)
    file(MAKE_DIRECTORY ${ST_FUZZ_SCRATCH})
    add_test(NAME fuzz_gguf
             COMMAND fuzz_gguf -max_total_time=20 -rss_limit_mb=2048 -max_len=65536
                     -timeout=10 ${ST_FUZZ_SCRATCH} ${CMAKE_CURRENT_LIST_DIR}/corpus/gguf)
    set_tests_properties(fuzz_gguf PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
