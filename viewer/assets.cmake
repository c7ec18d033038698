# cmake -P script (viewer/CMakeLists.txt): npm ci in WORK from SRC's
# package.json and package-lock.json, then copy the page and three.js into OUT.
file(MAKE_DIRECTORY ${WORK} ${OUT})
file(COPY ${SRC}/package.json ${SRC}/package-lock.json DESTINATION ${WORK})
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --prefer-offline --loglevel=error
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
set(three ${WORK}/node_modules/three)
file(REMOVE_RECURSE ${OUT}/vendor)
if(NOT rc EQUAL 0 OR NOT EXISTS ${three}/build/three.module.min.js)
  message(WARNING "viewer: npm ci failed (${rc}); building without three.js, so contactd's page "
                  "will say that the viewer is not installed.\n${out}")
else()
  file(MAKE_DIRECTORY ${OUT}/vendor)
  # the minified build, under the name the page's import map gives
  file(COPY_FILE ${three}/build/three.module.min.js ${OUT}/vendor/three.module.js)
  file(COPY_FILE ${three}/examples/jsm/controls/OrbitControls.js ${OUT}/vendor/OrbitControls.js)
  file(COPY_FILE ${three}/LICENSE ${OUT}/vendor/three.LICENSE)
endif()
foreach(f index.html viewer.js viewer.css)
  file(COPY_FILE ${SRC}/${f} ${OUT}/${f})
endforeach()
file(TOUCH ${OUT}/.stamp)
