# Writes axle.pc at install time (install(CODE) in CMakeLists.txt sets the
# AX_PC_* variables): CMAKE_INSTALL_PREFIX is then the prefix being
# installed to, also when it is given as `cmake --install --prefix DIR`.
# SPDX-License-Identifier: BSD-3-Clause
set(AX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(d LIBDIR INCLUDEDIR)
  if(NOT IS_ABSOLUTE "${AX_PC_${d}}")
    set(AX_PC_${d} "\${prefix}/${AX_PC_${d}}")
  endif()
endforeach()
configure_file("${AX_PC_IN}" "${AX_PC_OUT}" @ONLY)
