# `cmake --install`: the libraries (static and shared) and public headers, a CMake
# package (find_package(TurboQuant 0.1) -> TurboQuant::turboquant,
# TurboQuant::turboquant_shared, turboquant_generate_kernels()), and a pkg-config file.
# The generation kit (generator, templates, runtime sources, tq-codebook) goes along,
# so that turboquant_generate_kernels() works from the installed package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TQ_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/TurboQuant)
set(TQ_KIT_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/turboquant)

install(TARGETS turboquant turboquant_shared tq-codebook EXPORT TurboQuantTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY runtime/include/turboquant DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT TurboQuantTargets NAMESPACE TurboQuant:: DESTINATION ${TQ_CMAKE_INSTALL_DIR})

install(DIRECTORY generator/ DESTINATION ${TQ_KIT_INSTALL_DIR}/generator FILES_MATCHING PATTERN "*.py"
        PATTERN "__pycache__" EXCLUDE PATTERN "export.py" EXCLUDE)  # export runs from a source tree
install(DIRECTORY templates DESTINATION ${TQ_KIT_INSTALL_DIR})
install(DIRECTORY runtime/isa runtime/src DESTINATION ${TQ_KIT_INSTALL_DIR}/runtime)
install(FILES cmake/TurboQuantGenerate.cmake DESTINATION ${TQ_CMAKE_INSTALL_DIR})

configure_package_config_file(cmake/TurboQuantConfig.cmake.in ${PROJECT_BINARY_DIR}/TurboQuantConfig.cmake
                              INSTALL_DESTINATION ${TQ_CMAKE_INSTALL_DIR}
                              PATH_VARS TQ_KIT_INSTALL_DIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TurboQuantConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TurboQuantConfig.cmake ${PROJECT_BINARY_DIR}/TurboQuantConfigVersion.cmake
        DESTINATION ${TQ_CMAKE_INSTALL_DIR})

# Relocatable: the prefix is found from the .pc file's own place (cmake --install --prefix).
file(RELATIVE_PATH TQ_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(cmake/turboquant.pc.in ${PROJECT_BINARY_DIR}/turboquant.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/turboquant.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
