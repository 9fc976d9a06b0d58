"""Escaping text from files for terminals, markdown and XML."""

import xml.etree.ElementTree as ET

from ecobench.io import textsafe


def test_terminal_shows_control_characters_instead_of_running_them():
    assert textsafe.terminal("a\x1b[31mb\x07\u202ec\nd") == "a\\x1b[31mb\\x07\\u202ec\nd"
    assert textsafe.terminal("a\nb\tc", keep_newlines=False) == "a b c"


def test_markdown_has_no_markup_left():
    out = textsafe.markdown("![img](http://x/y.png) # h | cell <b>&</b> @me\nnext")
    assert out == ("\\!\\[img\\]\\(http\\:\\/\\/x\\/y\\.png\\) \\# h \\| cell &lt;b&gt;&amp;&lt;\\/b&gt; "
                   "\\@me next")


def test_xml_text_keeps_the_document_well_formed():
    el = ET.Element("x", message=textsafe.xml("bad \x00\x01\x1b chars \ufffe"))
    root = ET.fromstring(ET.tostring(el, encoding="unicode"))
    assert root.get("message") == "bad \\x00\\x01\\x1b chars \\ufffe"
