/* gst-spice shared library: metas, draws format, events, keymap, wire code
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include "gstspicerect.h"
#include "gstspiceblit.h"
#include "gstspicedamagemeta.h"
#include "gstspicedamage.h"
#include "gstspicestreammeta.h"
#include "gstspicedraws.h"
#include "gstspiceimage.h"
#include "gstspiceevents.h"
#include "gstspicereportlimit.h"
#include "gstspiceagent.h"
#include "gstspicefilexfer.h"
#include "gstspicekeymap.h"
#include "gstspicesecret.h"
#include "gstspicewire.h"
#include "gstspiceticket.h"
#include "gstspiceaudio.h"
