# e2e_package: the Debian package (cmake/StrataPackage.cmake) is built with
# cpack -G DEB, checked with dpkg-deb, installed into a fresh root and
# serves /health from there (package.sh). Skipped without dpkg-deb or cpack.
if(TARGET strata)
    add_test(NAME e2e_package COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/package.sh ${PROJECT_BINARY_DIR})
    # RUN_SERIAL: cpack's preinstall step runs make in the build tree.
    set_tests_properties(e2e_package PROPERTIES LABELS "package" TIMEOUT 600
                         SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
