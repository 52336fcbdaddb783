# StrataPackage.cmake -- `make install` rules and the Debian package
# (`cd build && cpack -G DEB`): the binary, strata.service (its own user,
# made by packaging/postinst), /etc/strata/strata.yaml, the man page made
# from the binary's --help at build time (packaging/man.sh), the docs and
# the example configs. tests/e2e/package.sh builds and installs it.
include(GNUInstallDirs)
# `make install` / cpack install what is built and do not first rebuild every
# test target (the package holds only strata and its man page; build first:
# `cmake --build build && cd build && cpack -G DEB`).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(ST_PKG_DIR ${PROJECT_SOURCE_DIR}/packaging)
set(ST_MAN ${CMAKE_CURRENT_BINARY_DIR}/strata.1.gz)
add_custom_command(OUTPUT ${ST_MAN}
                   COMMAND sh ${ST_PKG_DIR}/man.sh $<TARGET_FILE:strata> ${ST_MAN}
                   DEPENDS strata ${ST_PKG_DIR}/man.sh
                   COMMENT "strata.1 from strata --help")
add_custom_target(strata_man ALL DEPENDS ${ST_MAN})

install(TARGETS strata RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${ST_MAN} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# Absolute paths: a package installs them there whatever the prefix.
install(FILES ${ST_PKG_DIR}/strata.yaml DESTINATION /etc/strata)
install(FILES ${ST_PKG_DIR}/strata.service DESTINATION /lib/systemd/system)
install(FILES README.md LICENSE docs/GUIDE.md docs/CLI.md docs/CONFIG.md docs/API.md
              docs/PRIORITY.md docs/MODELS.md docs/CUDA.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(FILES configs/strata.example.yaml configs/multi-model.example.yaml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

set(CPACK_PACKAGE_NAME strata)
set(CPACK_PACKAGE_VENDOR "Strata")
set(CPACK_PACKAGE_CONTACT "Strata maintainers <strata@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OpenAI-compatible LLM inference server with priority scheduling")
set(CPACK_PACKAGE_DESCRIPTION
    "A single-binary LLM inference server in C11 with its own engine for GGUF models\n(Qwen3-MoE, GLM-4.5, Llama, Mistral) on the CPU and CUDA. It answers the OpenAI\nand Anthropic APIs; every request carries a priority that orders the queue.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/strata/strata")
# passwd: useradd in postinst. The libraries come from dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
find_program(ST_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(ST_DPKG_SHLIBDEPS)
    set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd, libc6, libmicrohttpd12, libcjson1, libyaml-0-2")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${ST_PKG_DIR}/postinst ${ST_PKG_DIR}/prerm ${ST_PKG_DIR}/postrm ${ST_PKG_DIR}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
