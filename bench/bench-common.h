/* gst-spice bench: what the C benches share
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <time.h>

#include <gst/video/video.h>

/* the test guest's surface and its activity area */
#define W 1280
#define H 800
static const GstVideoRectangle ACT = { 608, 160, 640, 480 };

/* CPU time of the process, in seconds */
static inline double
cpu_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
