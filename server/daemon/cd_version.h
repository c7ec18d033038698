/* cd_version.h — the daemon's version string (CMake passes the project
 * version as CD_VERSION_STRING; this is the fallback). */
#ifndef CD_VERSION_H
#define CD_VERSION_H
#ifndef CD_VERSION_STRING
#define CD_VERSION_STRING "0.1.0"
#endif
#endif
