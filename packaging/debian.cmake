# packaging/debian.cmake: the man pages, what `cmake --install` puts under share/, and the Debian
# package `cmake --build BUILD --target package` makes with CPack (BUILD/qrel_<version>_<arch>.deb).
#
# The package installs the two programs in /usr/bin, qrel-exporter.service (running as the system
# user qrel its postinst creates, flags from /etc/default/qrel-exporter), /etc/qrel/qrel.yml,
# the alert rules and dashboards in /usr/share/qrel. Its Depends come from dpkg-shlibdeps on the
# binaries, so they follow whatever the build links. The files under /etc and /lib are in the
# component `deb`, left out of a plain `cmake --install` (a /usr/local install gets programs, man
# pages and share/ only, and no unit pointing at /usr/bin). tests/artifacts/package.sh builds,
# checks, installs and removes the package.

set(QREL_DEB_MAINTAINER "qrel maintainers <qrel@example.org>"
    CACHE STRING "Maintainer field of the Debian package")

# Man pages from each program's own --help (packaging/manpage.sh), gzipped as Debian wants them.
set(QREL_MAN_DIR ${CMAKE_BINARY_DIR}/man)
set(QREL_MAN_SUMMARY_qrel "collect message-queue reliability metrics once, or check them like a Nagios plugin")
set(QREL_MAN_SUMMARY_qrel_exporter "Prometheus exporter for message-queue reliability")
set(QREL_MAN_PAGES "")
foreach(prog qrel qrel_exporter)
  set(page ${QREL_MAN_DIR}/${prog}.1)
  add_custom_command(
    OUTPUT ${page} ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${QREL_MAN_DIR}
    COMMAND bash ${CMAKE_SOURCE_DIR}/packaging/manpage.sh ${page} $<TARGET_FILE:${prog}> ${prog}
            ${PROJECT_VERSION} ${QREL_MAN_SUMMARY_${prog}} ${CMAKE_SOURCE_DIR}/packaging/man/${prog}.tail
    COMMAND gzip -9nkf ${page}
    DEPENDS ${prog} ${CMAKE_SOURCE_DIR}/packaging/manpage.sh
            ${CMAKE_SOURCE_DIR}/packaging/man/${prog}.tail
    COMMENT "Man page ${prog}(1) from ${prog} --help"
    VERBATIM)
  list(APPEND QREL_MAN_PAGES ${page}.gz)
endforeach()
add_custom_target(manpages ALL DEPENDS ${QREL_MAN_PAGES})

# Resolve every symbol at start and make the relocations read-only (lintian's hardening-no-bindnow;
# Debian's dpkg-buildflags do the same). Link-time only, so no warning can break a -Werror build.
if(NOT QREL_SANITIZE)
  target_link_options(qrel PRIVATE -Wl,-z,relro -Wl,-z,now)
  target_link_options(qrel_exporter PRIVATE -Wl,-z,relro -Wl,-z,now)
endif()

set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
install(FILES ${QREL_MAN_PAGES} DESTINATION share/man/man1)
file(GLOB QREL_ALERT_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/alerts/*.yml)
file(GLOB QREL_ALERT_EXAMPLES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/alerts/examples/*.yml)
file(GLOB QREL_ALERT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/alerts/tests/*.yml)
file(GLOB QREL_DASHBOARDS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/dashboards/*.json)
install(FILES ${QREL_ALERT_FILES} DESTINATION share/qrel/alerts)
install(FILES ${QREL_ALERT_EXAMPLES} DESTINATION share/qrel/alerts/examples)
# The rules' promtool tests, so `promtool test rules /usr/share/qrel/alerts/tests/*.yml` checks
# the shipped rules against the Prometheus you run.
install(FILES ${QREL_ALERT_TESTS} DESTINATION share/qrel/alerts/tests)
install(FILES ${QREL_DASHBOARDS} DESTINATION share/qrel/dashboards)
install(FILES ${CMAKE_SOURCE_DIR}/qrel.example.yml DESTINATION share/doc/qrel/examples)

# Debian's own files: copyright, changelog (version from project()), and the system files.
configure_file(${CMAKE_SOURCE_DIR}/packaging/deb/changelog.in ${CMAKE_BINARY_DIR}/deb/changelog @ONLY)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/deb/changelog.gz
                   COMMAND gzip -9nkf ${CMAKE_BINARY_DIR}/deb/changelog
                   DEPENDS ${CMAKE_BINARY_DIR}/deb/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/deb/changelog.gz)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/deb/copyright ${CMAKE_BINARY_DIR}/deb/changelog.gz
        DESTINATION share/doc/qrel COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/deb/qrel.yml DESTINATION /etc/qrel COMPONENT deb
        EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/deb/qrel-exporter.default DESTINATION /etc/default
        RENAME qrel-exporter COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/deb/qrel-exporter.service
              ${CMAKE_SOURCE_DIR}/packaging/deb/qrel-exporter.socket
        DESTINATION /lib/systemd/system COMPONENT deb EXCLUDE_FROM_ALL)

# Maintainer scripts are kept as *.sh (so the lint step checks them); dpkg wants bare names.
foreach(script postinst prerm postrm)
  configure_file(${CMAKE_SOURCE_DIR}/packaging/deb/${script}.sh ${CMAKE_BINARY_DIR}/deb/${script}
                 COPYONLY)
endforeach()
configure_file(${CMAKE_SOURCE_DIR}/packaging/deb/conffiles ${CMAKE_BINARY_DIR}/deb/conffiles COPYONLY)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME qrel)
set(CPACK_PACKAGE_VENDOR "the qrel authors")
set(CPACK_PACKAGE_CONTACT "${QREL_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# One package holding the default component and `deb`.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified deb)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_NAME qrel)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${QREL_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "Prometheus exporter and health check for message-queue reliability
qrel polls message brokers and application tables for queue depth,
oldest-message age, consumer lag in seconds, the lease margin (lease
divided by how long messages are really held), redeliveries and dead
letters, for Redis streams, PostgreSQL (tables and job runners), Amazon SQS,
RabbitMQ, Kafka, NATS JetStream, Google Pub/Sub, Sidekiq, BullMQ, Celery, RQ
and beanstalkd.
qrel_exporter serves them to Prometheus (qrel-exporter.service); qrel check
turns them into findings with a Nagios-style exit status; qrel dlq tells
which dead letters' work was done and replays only the others. Alert rules
and Grafana dashboards are in /usr/share/qrel.")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_BINARY_DIR}/deb/conffiles ${CMAKE_BINARY_DIR}/deb/postinst
    ${CMAKE_BINARY_DIR}/deb/prerm ${CMAKE_BINARY_DIR}/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

# The container image (docs/kubernetes.md#image): `cmake --build BUILD --target image`, as root or
# with subordinate ids, writes BUILD/image/oci and BUILD/image/qrel_exporter-<version>.docker.tar.
# The script makes its own package with CPack from the programs and man pages built here.
add_custom_target(image
  COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/build-image.sh ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/image
  COMMENT "Container image of qrel_exporter (scripts/build-image.sh)"
  USES_TERMINAL VERBATIM)
add_dependencies(image qrel qrel_exporter manpages deb_changelog)
