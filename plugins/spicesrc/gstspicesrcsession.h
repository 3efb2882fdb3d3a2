/* gst-spice: spicesrc's session: connect, fail, reconnect, tear down
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspicesrcpriv.h"

G_BEGIN_DECLS

/* the state-change thread (start()): @p's session connects on the
 * context; the caller keeps its reference to @p */
void     gst_spice_src_session_start (GstSpiceSrc * self, SessionParams * p);
/* the state-change thread (stop(), once @p is marked stopped): @p's
 * session ends on the context, which then raises self->torn_down to @p's
 * serial (under self->lock, broadcast on self->cond) and, if @helper_ref,
 * releases the start's reference to the context helper; takes @p */
void     gst_spice_src_session_teardown (GstSpiceSrc * self,
    SessionParams * p, gboolean helper_ref);

/* any thread */
void     gst_spice_src_session_params_unref (SessionParams * p);

G_END_DECLS
