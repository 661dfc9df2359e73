# Doxygen's input filter for include/axle.h (docs/Doxyfile): the header is
# written for people, in plain C comments, and this turns it into what
# Doxygen reads, leaving the header itself alone.
#
#  - A section banner (a rule, a title, a rule) starts a group: each part
#    of the API becomes a page, titled and introduced in docs/groups.dox.
#    An unknown title makes a group of its own (its slug).
#  - A comment that starts a line documents what follows: it becomes a
#    doc comment (/** ... */).  When it is followed by several
#    declarations (up to a blank line or the next comment) they are made
#    one member group, so that each of them shows the comment
#    (DISTRIBUTE_GROUP_DOC).
#  - A comment after code on the same line documents that code (/**< */).
#  - The file's opening comment documents the file.
#  - A comment before a preprocessor conditional or pragma stays a plain
#    comment (it is about the build, not the API).
# The header's lines keep their numbers in Doxygen's messages: nothing
# is added or removed but for the opening of the first group (a line
# added after the include guard, a blank line taken out before the first
# section).
# SPDX-License-Identifier: BSD-3-Clause

function slug(t,   s) {
    s = tolower(t)
    gsub(/[^a-z0-9]+/, "_", s)
    gsub(/^_|_$/, "", s)
    return s
}
function group_of(t) {
    known = 1
    if (t == "Element types") return "types"
    if (t == "Contexts and options") return "contexts"
    if (t == "Errors") return "errors"
    if (t == "Host arrays") return "arrays"
    if (t == "Scalar expressions") return "scalars"
    if (t == "Array computations") return "operations"
    if (t == "Running") return "running"
    known = 0
    return slug(t)
}
# The heading of a member group: the comment's first words, up to the
# first . : ( or , on its first line, if they are few; else none.
function member_group_name(s,   t) {
    t = s
    sub(/^[ \t]*\/\*\*?[ \t]*/, "", t)
    sub(/\*\/.*/, "", t)
    if (!match(t, /[.:(,]/)) return ""
    t = substr(t, 1, RSTART - 1)
    sub(/[ \t]+$/, "", t)
    if (t == "" || length(t) > 52 || t ~ /^(Each|For|The kind|The|A|An) /) return ""
    return "/** @name " t " */ "
}
function is_rule(s) { return s ~ /^\/\* -----+ \*\/[ \t]*$/ }
function is_blank(s) { return s ~ /^[ \t]*$/ }
function starts_comment(s) { return s ~ /^[ \t]*\/\*/ }
# index of the line that ends the comment starting at line i
function comment_end(i) {
    while (i <= n && index(L[i], "*/") == 0) i++
    return i
}
# Counts the declarations after line i up to a blank line, a comment
# line, a preprocessor line or a closing brace at depth 0; sets LAST to
# the line of the last one.
function count_decls(i,   d, depth, s, t) {
    d = 0; depth = 0; LAST = 0
    for (; i <= n; i++) {
        s = L[i]
        if (is_blank(s) || starts_comment(s)) break
        # a run of macros is a run of declarations
        if (s ~ /^[ \t]*#[ \t]*define/) { if (depth == 0) { d++; LAST = i }; continue }
        if (s ~ /^[ \t]*#/) break
        if (depth == 0 && s ~ /^[ \t]*}/) break
        t = s
        sub(/\/\*.*/, "", t)           # code only
        depth += gsub(/{/, "{", t) - gsub(/}/, "}", t)
        if (depth == 0 && t ~ /;[ \t]*$/) { d++; LAST = i }
        # a trailing comment that goes on over the next lines
        if (index(s, "/*") && !index(substr(s, index(s, "/*")), "*/")) i = comment_end(i + 1)
    }
    return d
}

# Doxygen reads "#if" in a comment as a link request and "<text>" as an
# HTML tag: both are escaped (in comments only; code has neither).
function escape(s) {
    s = gensub_hash(s)
    while (match(s, /<[a-z]+>/)) s = substr(s, 1, RSTART - 1) "\\<" substr(s, RSTART + 1, RLENGTH - 2) "\\>" substr(s, RSTART + RLENGTH)
    return s
}
function gensub_hash(s,   out) {
    out = ""
    while (match(s, /(^|[ (])#[a-z]/)) {
        out = out substr(s, 1, RSTART + RLENGTH - 3) "\\#" substr(s, RSTART + RLENGTH - 1, 1)
        s = substr(s, RSTART + RLENGTH)
    }
    return out s
}

BEGIN { DROP = "\001" }
{ L[++n] = $0 }

END {
    group = ""
    for (i = 1; i <= n; i++) {
        s = L[i]
        # the file's opening comment
        if (i == 1 && s ~ /^\/\*[ \t]*$/) {
            L[i] = "/** @file axle.h"
            e = comment_end(i)
            for (j = i; j <= e; j++) L[j] = escape(L[j])
            i = e
            continue
        }
        # the opening of the first group, after the include guard
        if (s ~ /^#define AXLE_H/) { want_basics = 1; continue }
        if (want_basics && is_blank(s)) {
            L[i] = "/** @addtogroup basics\n@{ */"
            group = "basics"
            want_basics = 0
            drop_blank = 1      # the line added here is taken out below
            continue
        }
        if (drop_blank && is_blank(s)) { L[i] = DROP; drop_blank = 0; continue }
        # a banner: rule, title, rule
        if (is_rule(s) && i + 2 <= n && is_rule(L[i + 2]) && L[i + 1] ~ /^\/\* [A-Za-z]/) {
            title = L[i + 1]
            sub(/^\/\* /, "", title); sub(/[ \t]*\*\/[ \t]*$/, "", title); sub(/[ \t]+$/, "", title)
            g = group_of(title)
            L[i] = group != "" ? "/** @} */" : ""
            # (a known part has its title in docs/groups.dox)
            L[i + 1] = "/** @addtogroup " g (known ? "" : " " title)
            L[i + 2] = "@{ */"
            group = g
            i += 2
            continue
        }
        if (starts_comment(s) && s !~ /^[ \t]*\/\*\*/) {
            e = comment_end(i)
            if (L[e + 1] ~ /^[ \t]*#[ \t]*(if|ifdef|ifndef|pragma|endif|include)/) { i = e; continue }
            sub(/\/\*/, "/**", L[i])
            for (j = i; j <= e; j++) L[j] = escape(L[j])
            if (count_decls(e + 1) >= 2) {
                if (index(L[LAST], "/*") && !index(substr(L[LAST], index(L[LAST], "/*")), "*/"))
                    LAST = comment_end(LAST + 1)
                L[i] = member_group_name(L[i]) "/**@{*/ " L[i]
                # (a comment after a macro would be part of it: the group
                # ends at the start of the next line)
                if (L[LAST] ~ /^[ \t]*#/) PRE[LAST + 1] = PRE[LAST + 1] "/**@}*/ "
                else L[LAST] = L[LAST] " /**@}*/"
            }
            i = e
            continue
        }
        # a comment after code documents that code (not after a
        # preprocessor line: "#endif /* AXLE_H */")
        if (!starts_comment(s) && s !~ /^[ \t]*#/ && match(s, /\/\*[^*<]/)) {
            L[i] = substr(s, 1, RSTART - 1) "/**<" escape(substr(s, RSTART + 2))
            if (!index(substr(s, RSTART), "*/")) {
                e = comment_end(i + 1)
                for (j = i + 1; j <= e; j++) L[j] = escape(L[j])
                i = e
            }
        }
    }
    # the last group ends before the closing lines of the header (the
    # last "#ifdef __cplusplus"): Doxygen reads nothing after the guard
    if (group != "") {
        for (c = n; c > 0 && L[c] !~ /^#ifdef __cplusplus/; c--) ;
        if (c > 1 && is_blank(L[c - 1])) L[c - 1] = "/** @} */"
        else if (c > 1) L[c - 1] = L[c - 1] " /** @} */"
        else L[n] = L[n] "\n/** @} */"
    }
    for (i = 1; i <= n; i++) if (L[i] != DROP) print PRE[i] L[i]
}
