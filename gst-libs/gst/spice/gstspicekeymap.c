/* gst-spice: X11 keysym names <-> PC AT (XT set 1) scancodes, US layout
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GstNavigation key events carry X11 keysym names (what xvimagesink,
 * ximagesink and glimagesink send); gtksink sends typed characters. Both
 * are mapped to the physical key of a US keyboard. The first entry for a
 * scancode is its canonical name (used for scancode -> name).
 */
#include <string.h>

#include "gstspicekeymap.h"

#define E(sc) (GST_SPICE_SCANCODE_EXTENDED | (sc))

typedef struct
{
  const gchar *name;
  guint16 scancode;
  gboolean shifted;             /* the name means Shift + this key */
} KeyEntry;

static const KeyEntry keys[] = {
  {"Escape", 0x01}, {"1", 0x02}, {"2", 0x03}, {"3", 0x04}, {"4", 0x05},
  {"5", 0x06}, {"6", 0x07}, {"7", 0x08}, {"8", 0x09}, {"9", 0x0a},
  {"0", 0x0b}, {"minus", 0x0c}, {"equal", 0x0d}, {"BackSpace", 0x0e},
  {"Tab", 0x0f}, {"q", 0x10}, {"w", 0x11}, {"e", 0x12}, {"r", 0x13},
  {"t", 0x14}, {"y", 0x15}, {"u", 0x16}, {"i", 0x17}, {"o", 0x18},
  {"p", 0x19}, {"bracketleft", 0x1a}, {"bracketright", 0x1b},
  {"Return", 0x1c}, {"Control_L", 0x1d}, {"a", 0x1e}, {"s", 0x1f},
  {"d", 0x20}, {"f", 0x21}, {"g", 0x22}, {"h", 0x23}, {"j", 0x24},
  {"k", 0x25}, {"l", 0x26}, {"semicolon", 0x27}, {"apostrophe", 0x28},
  {"grave", 0x29}, {"Shift_L", 0x2a}, {"backslash", 0x2b}, {"z", 0x2c},
  {"x", 0x2d}, {"c", 0x2e}, {"v", 0x2f}, {"b", 0x30}, {"n", 0x31},
  {"m", 0x32}, {"comma", 0x33}, {"period", 0x34}, {"slash", 0x35},
  {"Shift_R", 0x36}, {"KP_Multiply", 0x37}, {"Alt_L", 0x38},
  {"space", 0x39}, {"Caps_Lock", 0x3a}, {"F1", 0x3b}, {"F2", 0x3c},
  {"F3", 0x3d}, {"F4", 0x3e}, {"F5", 0x3f}, {"F6", 0x40}, {"F7", 0x41},
  {"F8", 0x42}, {"F9", 0x43}, {"F10", 0x44}, {"Num_Lock", 0x45},
  {"Scroll_Lock", 0x46}, {"KP_7", 0x47}, {"KP_8", 0x48}, {"KP_9", 0x49},
  {"KP_Subtract", 0x4a}, {"KP_4", 0x4b}, {"KP_5", 0x4c}, {"KP_6", 0x4d},
  {"KP_Add", 0x4e}, {"KP_1", 0x4f}, {"KP_2", 0x50}, {"KP_3", 0x51},
  {"KP_0", 0x52}, {"KP_Decimal", 0x53}, {"less", 0x56}, {"F11", 0x57},
  {"F12", 0x58},
  {"KP_Enter", E (0x1c)}, {"Control_R", E (0x1d)}, {"KP_Divide", E (0x35)},
  {"Print", E (0x37)}, {"Alt_R", E (0x38)}, {"Home", E (0x47)},
  {"Up", E (0x48)}, {"Prior", E (0x49)}, {"Left", E (0x4b)},
  {"Right", E (0x4d)}, {"End", E (0x4f)}, {"Down", E (0x50)},
  {"Next", E (0x51)}, {"Insert", E (0x52)}, {"Delete", E (0x53)},
  {"Super_L", E (0x5b)}, {"Super_R", E (0x5c)}, {"Menu", E (0x5d)},
  /* aliases: keysym names */
  {"Page_Up", E (0x49)}, {"Page_Down", E (0x51)}, {"ISO_Level3_Shift",
      E (0x38)}, {"Meta_L", 0x38}, {"Meta_R", E (0x38)},
  {"KP_Home", 0x47}, {"KP_Up", 0x48}, {"KP_Prior", 0x49}, {"KP_Page_Up",
      0x49}, {"KP_Left", 0x4b}, {"KP_Begin", 0x4c}, {"KP_Right", 0x4d},
  {"KP_End", 0x4f}, {"KP_Down", 0x50}, {"KP_Next", 0x51}, {"KP_Page_Down",
      0x51}, {"KP_Insert", 0x52}, {"KP_Delete", 0x53}, {"Sys_Req", E (0x37)},
  {"ISO_Left_Tab", 0x0f, TRUE}, {"KP_Separator", 0x53},
  /* shifted keysyms */
  {"exclam", 0x02, TRUE}, {"at", 0x03, TRUE}, {"numbersign", 0x04, TRUE},
  {"dollar", 0x05, TRUE}, {"percent", 0x06, TRUE},
  {"asciicircum", 0x07, TRUE}, {"ampersand", 0x08, TRUE},
  {"asterisk", 0x09, TRUE}, {"parenleft", 0x0a, TRUE},
  {"parenright", 0x0b, TRUE}, {"underscore", 0x0c, TRUE},
  {"plus", 0x0d, TRUE}, {"braceleft", 0x1a, TRUE},
  {"braceright", 0x1b, TRUE}, {"colon", 0x27, TRUE},
  {"quotedbl", 0x28, TRUE}, {"asciitilde", 0x29, TRUE}, {"bar", 0x2b, TRUE},
  {"greater", 0x34, TRUE}, {"question", 0x35, TRUE},
  /* characters as gtksink sends them */
  {"-", 0x0c}, {"=", 0x0d}, {"[", 0x1a}, {"]", 0x1b}, {";", 0x27},
  {"'", 0x28}, {"`", 0x29}, {"\\", 0x2b}, {",", 0x33}, {".", 0x34},
  {"/", 0x35}, {" ", 0x39}, {"\t", 0x0f}, {"\r", 0x1c}, {"\n", 0x1c},
  {"\b", 0x0e}, {"\x1b", 0x01},
  {"!", 0x02, TRUE}, {"@", 0x03, TRUE}, {"#", 0x04, TRUE}, {"$", 0x05, TRUE},
  {"%", 0x06, TRUE}, {"^", 0x07, TRUE}, {"&", 0x08, TRUE}, {"*", 0x09, TRUE},
  {"(", 0x0a, TRUE}, {")", 0x0b, TRUE}, {"_", 0x0c, TRUE}, {"+", 0x0d, TRUE},
  {"{", 0x1a, TRUE}, {"}", 0x1b, TRUE}, {":", 0x27, TRUE}, {"\"", 0x28, TRUE},
  {"~", 0x29, TRUE}, {"|", 0x2b, TRUE}, {"<", 0x33, TRUE}, {">", 0x34, TRUE},
  {"?", 0x35, TRUE},
};

static GHashTable *by_name;
static const gchar *by_code[0x200];

static void
keymap_init (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GHashTable *t = g_hash_table_new (g_str_hash, g_str_equal);
    guint i;

    for (i = 0; i < G_N_ELEMENTS (keys); i++) {
      if (!g_hash_table_contains (t, keys[i].name))
        g_hash_table_insert (t, (gpointer) keys[i].name, (gpointer) & keys[i]);
      if (!keys[i].shifted && !by_code[keys[i].scancode])
        by_code[keys[i].scancode] = keys[i].name;
    }
    by_name = t;
    g_once_init_leave (&done, 1);
  }
}

/**
 * gst_spice_keymap_scancode_from_name:
 * @key: an X11 keysym name ("a", "Return", "Shift_L") or a typed character
 * @shifted: (out) (optional): TRUE if @key means Shift + the returned key
 *
 * Returns: the scancode (0x100 | code for extended keys), or 0 if unknown
 */
guint
gst_spice_keymap_scancode_from_name (const gchar * key, gboolean * shifted)
{
  const KeyEntry *e;

  if (shifted)
    *shifted = FALSE;
  if (!key || !*key)
    return 0;
  keymap_init ();
  e = g_hash_table_lookup (by_name, key);
  if (!e && key[1] == '\0' && g_ascii_isupper (key[0])) {
    gchar lower[2] = { g_ascii_tolower (key[0]), 0 };

    e = g_hash_table_lookup (by_name, lower);
    if (e && shifted)
      *shifted = TRUE;
    return e ? e->scancode : 0;
  }
  if (!e)
    return 0;
  if (shifted)
    *shifted = e->shifted;
  return e->scancode;
}

/* Returns the unshifted keysym name of a scancode, or NULL if unknown. */
const gchar *
gst_spice_keymap_name_from_scancode (guint scancode)
{
  keymap_init ();
  if (scancode >= G_N_ELEMENTS (by_code))
    return NULL;
  return by_code[scancode];
}

GstNavigationModifierType
gst_spice_keymap_modifier_mask (guint scancode)
{
  switch (scancode) {
    case 0x2a:
    case 0x36:
      return GST_NAVIGATION_MODIFIER_SHIFT_MASK;
    case 0x1d:
    case E (0x1d):
      return GST_NAVIGATION_MODIFIER_CONTROL_MASK;
    case 0x38:
      return GST_NAVIGATION_MODIFIER_MOD1_MASK;
    case E (0x38):
      return GST_NAVIGATION_MODIFIER_MOD5_MASK;
    case E (0x5b):
    case E (0x5c):
      return GST_NAVIGATION_MODIFIER_SUPER_MASK |
          GST_NAVIGATION_MODIFIER_MOD4_MASK;
    default:
      return 0;
  }
}
