# Installs the clustersim_analysis package (CLUSTERSIM_PYTHON_FILES, set by the top-level install rules) where
# Debian's /usr/bin/python3 finds it for the install prefix, chosen at install time because the prefix is:
#   /usr                   lib/python3/dist-packages       (the .deb; Debian's own packages' directory)
#   Python's user base     lib/python3.X/site-packages     (`make install PREFIX=$HOME/.local`: the user site)
#   any other prefix       lib/python3.X/dist-packages     (on sys.path for /usr/local; elsewhere PYTHONPATH)
# Without /usr/bin/python3: lib/python3/dist-packages. Runs inside `cmake --install` (DESTDIR is honoured).
set(_python /usr/bin/python3)
set(_dir lib/python3/dist-packages)
if(EXISTS ${_python})
  execute_process(COMMAND ${_python} -c [[
import os, site, sys
prefix = os.path.realpath(sys.argv[1])
version = "%d.%d" % sys.version_info[:2]
if prefix == "/usr":
    print("lib/python3/dist-packages", end="")
elif prefix == os.path.realpath(site.getuserbase()):
    print("lib/python%s/site-packages" % version, end="")
else:
    print("lib/python%s/dist-packages" % version, end="")
]] "${CMAKE_INSTALL_PREFIX}" OUTPUT_VARIABLE _chosen RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND NOT _chosen STREQUAL "")
    set(_dir ${_chosen})
  endif()
endif()
file(INSTALL ${CLUSTERSIM_PYTHON_FILES} DESTINATION "${CMAKE_INSTALL_PREFIX}/${_dir}/clustersim_analysis")
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr/local"
   AND NOT _dir MATCHES "site-packages$")
  message(STATUS "clustersim_analysis: for Python to find it, export PYTHONPATH=${CMAKE_INSTALL_PREFIX}/${_dir}")
endif()
