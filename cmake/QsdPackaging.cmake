# The Debian package: `cpack --config <build>/CPackConfig.cmake` (scripts/package) makes
# qsd_<version>_<arch>.deb from the install rules, installed below /usr whatever prefix the build
# tree was configured with.

set(QSD_PACKAGE_MAINTAINER "qsd developers <qsd@example.org>" CACHE STRING
    "Maintainer field of the Debian package")

# What Debian requires of every package beyond the program: the copyright file and, for a
# native package, the changelog as changelog.gz, both in /usr/share/doc/<package>.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
qsd_install_gzipped(${PROJECT_SOURCE_DIR}/packaging/changelog ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME qsd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "qsd")
set(CPACK_PACKAGE_CONTACT "${QSD_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "desktop system state as one JSON tree over a Unix socket")
# Lines as they appear in the control file (Debian wants them under 80 columns; CPack does not wrap).
string(JOIN "\n" CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "qsd is a per-user daemon that keeps the desktop's system state as one JSON"
  "tree: network (NetworkManager), power (UPower and power-profiles-daemon),"
  "audio (PipeWire), the StatusNotifierItem tray, and Wayland outputs and"
  "windows. It serves the tree over a Unix socket as JSON-RPC 2.0 with change"
  "streams, so every bar, shell and script of a session shares one daemon."
  ""
  "This package contains the daemon, the qsctl command-line client, the Qsd"
  "QML module for Qt 6 (import Qsd) and the systemd user units: qsd is started"
  "by qsd.socket on the first connection.")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# qsd_<version>_<arch>.deb, the Debian file name (no revision: the version is the project's).
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Depends from the libraries the binaries and the QML plugin really link.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
# Install with DESTDIR and CMAKE_INSTALL_PREFIX=/usr (not into a staging prefix), so what is
# computed from the prefix at install time (qsd.service's ExecStart) names the installed path.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
