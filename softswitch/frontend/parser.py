"""Recursive-descent parser for softswitch's P4_16 subset: tokens -> list of declaration Nodes."""

from __future__ import annotations

from .ast import Annotation, Node
from .errors import P4Error

_BINARY_PREC = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    ">": 4,
    "<=": 4,
    ">=": 4,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8,
    ">>": 8,
    "++": 9,
    "+": 9,
    "-": 9,
    "|+|": 9,
    "|-|": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
_UNSUPPORTED_DECLS = {}
_DIRECTIONS = ("in", "out", "inout")
_COMPOUND_ASSIGNMENTS = ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", "|+|=", "|-|=")


class OperatorToken:
    """An operator made of several tokens (`>` `>=` is `>>=`): its text and position."""

    def __init__(self, text, pos):
        self.text, self.pos = text, pos


class Parser:
    def __init__(self, toks):
        self.toks = toks
        self.i = 0
        self.type_names: set[str] = {"packet_in", "packet_out"}

    # ------------------------------------------------------------------ token helpers
    @property
    def tok(self):
        return self.toks[self.i]

    def peek(self, k=0):
        j = min(self.i + k, len(self.toks) - 1)
        return self.toks[j]

    def next(self):
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def at(self, text, k=0):
        t = self.peek(k)
        return t.text == text and t.kind in ("op", "id")

    def accept(self, text):
        if self.at(text):
            return self.next()
        return None

    def expect(self, text, what=None):
        if self.at(text):
            return self.next()
        raise P4Error(
            self.tok.pos, f"syntax error: expected '{text}'{' ' + what if what else ''}, got '{self.tok.text}'"
        )

    def ident(self, what="a name"):
        t = self.tok
        if t.kind != "id":
            raise P4Error(t.pos, f"syntax error: expected {what}, got '{t.text}'")
        self.i += 1
        return t

    def error(self, msg, tok=None):
        raise P4Error((tok or self.tok).pos, msg)

    # ------------------------------------------------------------------ program
    def program(self):
        decls = []
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            decls.append(self.declaration())
        return decls

    def annotations(self):
        annos = []
        while self.at("@"):
            at = self.next()
            name = self.ident("an annotation name").text
            args = []
            body: list[str] = []  # the body's token texts, for P4Info's annotation strings
            if self.at("(") and not self._is_space_before_paren_block():
                self.next()
                depth = 0
                while True:
                    t = self.tok
                    if t.kind == "eof":
                        self.error(f"unterminated annotation @{name}", at)
                    if t.text == "(" and t.kind == "op":
                        depth += 1
                    elif t.text == ")" and t.kind == "op":
                        if depth == 0:
                            self.next()
                            break
                        depth -= 1
                    self.next()
                    body.append(t.text)
                    if t.kind == "str":
                        args.append(t.value)
                    elif t.kind == "int":
                        args.append(t.value[0])
                    elif t.kind == "id":
                        args.append(t.text)
            elif self.at("["):
                self.next()
                while not self.at("]"):
                    if self.tok.kind == "eof":
                        self.error(f"unterminated annotation @{name}", at)
                    self.next()
                self.next()
            text = f"@{name}({''.join(body)})" if body or self.toks[self.i - 1].text == ")" else f"@{name}"
            annos.append(Annotation(name, args, at.pos, text))
        return annos

    def _is_space_before_paren_block(self):
        return False

    def declaration(self):
        annos = self.annotations()
        t = self.tok
        if t.kind != "id":
            self.error(f"syntax error: expected a declaration, got '{t.text}'")
        kw = t.text
        if kw in _UNSUPPORTED_DECLS:
            self.error(f"{_UNSUPPORTED_DECLS[kw]} are not supported by softswitch")
        if kw == "const":
            return self.const_decl(annos)
        if kw in ("typedef", "type"):
            self.next()
            ty = self.type_ref()
            name = self.ident("a type name")
            self.expect(";")
            self.type_names.add(name.text)
            return Node("Typedef", name.pos, name=name.text, type=ty, annos=annos)
        if kw in ("header", "struct", "header_union"):
            self.next()
            name = self.ident("a type name")
            self.type_names.add(name.text)
            if self.at("<"):
                self.error(f"generic {kw} types are not supported by softswitch")
            self.expect("{")
            fields = []
            while not self.accept("}"):
                fa = self.annotations()
                fty = self.type_ref()
                fname = self.ident("a field name")
                self.expect(";")
                fields.append(Node("Field", fname.pos, name=fname.text, type=fty, annos=fa))
            kind = {"header": "Header", "struct": "Struct", "header_union": "HeaderUnion"}[kw]
            return Node(kind, name.pos, name=name.text, fields=fields, annos=annos)
        if kw == "enum":
            self.next()
            base = None
            if self.at("bit") or self.at("int"):
                base = self.type_ref()
            name = self.ident("an enum name")
            self.type_names.add(name.text)
            self.expect("{")
            members = []
            while not self.accept("}"):
                m = self.ident("an enum member")
                val = None
                if self.accept("="):
                    val = self.expression()
                members.append((m.text, val, m.pos))
                if not self.accept(","):
                    self.expect("}")
                    break
            return Node("Enum", name.pos, name=name.text, base=base, members=members, annos=annos)
        if kw in ("error", "match_kind") and self.at("{", 1):
            self.next()
            self.next()
            members = []
            while not self.accept("}"):
                m = self.ident("a member name")
                members.append((m.text, m.pos))
                if not self.accept(","):
                    self.expect("}")
                    break
            return Node("ErrorDecl" if kw == "error" else "MatchKind", t.pos, members=members)
        if kw == "extern":
            return self.extern_decl(annos)
        if kw in ("parser", "control"):
            return self.parser_or_control(annos)
        if kw == "package":
            self.next()
            name = self.ident("a package name")
            self.type_names.add(name.text)
            tparams = self.type_params()
            params = self.params()
            self.expect(";")
            return Node("Package", name.pos, name=name.text, tparams=tparams, params=params, annos=annos)
        if kw == "action":
            return self.action_decl(annos)
        if kw != "function" and self._is_function_decl():
            return self.function_decl(annos)
        if kw in self.type_names:
            return self.instance_or_var(annos, top=True)
        self.error(f"syntax error: unexpected '{kw}' at top level")

    def _is_function_decl(self):
        """At `ReturnType name(` or `ReturnType name<T>(`: a function declaration (the return type may be a
        type variable of the function)."""
        save = self.i
        try:
            self.type_ref(allow_tvars=True)
            return self.tok.kind == "id" and (self.at("(", 1) or self.at("<", 1))
        except P4Error:
            return False
        finally:
            self.i = save

    def function_decl(self, annos):
        """`ReturnType name<T...>(parameters) { body }` (P4_16 10.x functions)."""
        ret = self.type_ref(allow_tvars=True)
        name = self.ident("a function name")
        tparams = self.type_params()
        params = self.params(defaults=True)
        new_names = set(tparams) - self.type_names
        self.type_names |= new_names  # `T t = x;` in the body declares a variable of type T
        body = self.block([])
        self.type_names -= new_names
        return Node(
            "Function", name.pos, name=name.text, ret=ret, tparams=tparams, params=params, body=body, annos=annos
        )

    def const_decl(self, annos):
        self.expect("const")
        ty = self.type_ref()
        name = self.ident("a constant name")
        self.expect("=")
        val = self.expression()
        self.expect(";")
        return Node("Const", name.pos, name=name.text, type=ty, value=val, annos=annos)

    def type_params(self):
        tps = []
        if self.accept("<"):
            while True:
                tps.append(self.ident("a type parameter").text)
                if not self.accept(","):
                    break
            self.expect(">")
        return tps

    def params(self, defaults: bool = False):
        """A parameter list; `defaults`: parameters may have default values (functions and actions)."""
        self.expect("(")
        ps = []
        if self.accept(")"):
            return ps
        while True:
            annos = self.annotations()
            direction = None
            if self.tok.kind == "id" and self.tok.text in _DIRECTIONS:
                direction = self.next().text
            ty = self.type_ref()
            name = self.ident("a parameter name")
            default = None
            if self.at("="):
                if not defaults:
                    self.error(
                        "default parameter values are supported by softswitch for functions and actions only "
                        "(not for parsers, controls, externs and packages)"
                    )
                self.next()
                default = self.expression()
            ps.append(
                Node("Param", name.pos, name=name.text, direction=direction, type=ty, annos=annos, default=default)
            )
            if not self.accept(","):
                break
        self.expect(")")
        return ps

    def extern_decl(self, annos):
        self.next()
        if self.tok.kind == "id" and (self.at("{", 1) or (self.at("<", 1) and self._generic_then_brace())):
            name = self.ident()
            self.type_names.add(name.text)
            tparams = self.type_params()
            self.expect("{")
            methods = []
            while not self.accept("}"):
                ma = self.annotations()
                self.accept("abstract")
                if self.tok.text == name.text and self.at("(", 1):
                    mname = self.next()
                    params = self.params()
                    self.expect(";")
                    methods.append(
                        Node(
                            "Method",
                            mname.pos,
                            name=mname.text,
                            ret=None,
                            tparams=[],
                            params=params,
                            ctor=True,
                            annos=ma,
                        )
                    )
                    continue
                ret = self.type_ref(allow_tvars=True)
                mname = self.ident("a method name")
                mtp = self.type_params()
                params = self.params()
                self.expect(";")
                methods.append(
                    Node(
                        "Method", mname.pos, name=mname.text, ret=ret, tparams=mtp, params=params, ctor=False, annos=ma
                    )
                )
            return Node("Extern", name.pos, name=name.text, tparams=tparams, methods=methods, annos=annos)
        ret = self.type_ref(allow_tvars=True)
        name = self.ident("an extern function name")
        tparams = self.type_params()
        params = self.params()
        self.expect(";")
        return Node("ExternFunc", name.pos, name=name.text, ret=ret, tparams=tparams, params=params, annos=annos)

    def _generic_then_brace(self):
        j, depth = self.i + 1, 0
        while j < len(self.toks):
            t = self.toks[j].text
            if t == "<":
                depth += 1
            elif t == ">":
                depth -= 1
                if depth == 0:
                    return self.toks[j + 1].text == "{"
            elif t in (";", "{", "(", ")"):
                return False
            j += 1
        return False

    def parser_or_control(self, annos):
        kw = self.next().text
        name = self.ident(f"a {kw} name")
        self.type_names.add(name.text)
        tparams = self.type_params()
        params = self.params()
        if self.accept(";"):
            return Node(
                "ParserType" if kw == "parser" else "ControlType",
                name.pos,
                name=name.text,
                tparams=tparams,
                params=params,
                annos=annos,
            )
        ctor_params = []
        if self.at("("):
            ctor_params = self.params()
        self.expect("{")
        local_decls = []
        if kw == "parser":
            states = []
            while not self.accept("}"):
                la = self.annotations()
                if self.at("state"):
                    states.append(self.state(la))
                else:
                    local_decls.append(self.local_decl(la, in_parser=True))
            return Node(
                "Parser",
                name.pos,
                name=name.text,
                params=params,
                ctor_params=ctor_params,
                locals=local_decls,
                states=states,
                annos=annos,
                tparams=tparams,
            )
        body = None
        while not self.accept("}"):
            la = self.annotations()
            if self.at("apply"):
                at = self.next()
                if body is not None:
                    self.error(f"control {name.text} has two apply blocks", at)
                body = self.block([])
                continue
            local_decls.append(self.local_decl(la, in_parser=False))
        if body is None:
            self.error(f"control {name.text} has no apply block", name)
        return Node(
            "Control",
            name.pos,
            name=name.text,
            params=params,
            ctor_params=ctor_params,
            locals=local_decls,
            body=body,
            annos=annos,
            tparams=tparams,
        )

    def local_decl(self, annos, in_parser):
        t = self.tok
        if t.text == "value_set" and in_parser:  # value_set<T>(size) name;
            self.next()
            self.expect("<")
            ty = self.type_ref()
            self.expect(">")
            self.expect("(")
            size = self.expression()
            self.expect(")")
            name = self.ident("a value set name")
            self.expect(";")
            return Node("ValueSet", name.pos, name=name.text, type=ty, size=size, annos=annos)
        if t.text == "const":
            return self.const_decl(annos)
        if t.text == "action" and not in_parser:
            return self.action_decl(annos)
        if t.text == "table" and not in_parser:
            return self.table_decl(annos)
        if t.text in _UNSUPPORTED_DECLS:
            self.error(f"{_UNSUPPORTED_DECLS[t.text]} are not supported by softswitch")
        if self._starts_type() or (t.kind == "id" and (self.at("(", 1) or self.at("<", 1))):
            return self.instance_or_var(annos)
        self.error(f"syntax error: unexpected '{t.text}' in a {'parser' if in_parser else 'control'} body")

    def action_decl(self, annos):
        self.expect("action")
        name = self.ident("an action name")
        params = self.params(defaults=True)
        body = self.block([])
        return Node("Action", name.pos, name=name.text, params=params, body=body, annos=annos)

    def state(self, annos):
        self.expect("state")
        name = self.ident("a state name")
        self.expect("{")
        stmts = []
        transition = None
        while not self.accept("}"):
            if self.at("transition"):
                tt = self.next()
                if self.at("select"):
                    st = self.next()
                    self.expect("(")
                    exprs = [self.expression()]
                    while self.accept(","):
                        exprs.append(self.expression())
                    self.expect(")")
                    self.expect("{")
                    cases = []
                    while not self.accept("}"):
                        ks = self.keyset(":")
                        self.expect(":")
                        target = self.ident("a state name")
                        self.expect(";")
                        cases.append(Node("SelectCase", ks.pos, keyset=ks, state=target.text, spos=target.pos))
                    transition = Node("TransSelect", st.pos, exprs=exprs, cases=cases)
                else:
                    target = self.ident("a state name")
                    transition = Node("TransDirect", target.pos, state=target.text)
                    self.expect(";")
                if not self.at("}"):
                    self.error("syntax error: the transition must be the last statement of a state")
                _ = tt
                continue
            stmts.append(self.statement())
        return Node("State", name.pos, name=name.text, stmts=stmts, transition=transition, annos=annos)

    def keyset(self, follow):
        """A select case or table entry key: default/_ | (k, ...) | expr [&&& expr | .. expr]."""
        t = self.tok
        if self.at("default") or self.at("_"):
            self.next()
            return Node("Default", t.pos)
        if self.at("("):
            save = self.i
            try:
                self.next()
                items = [self.keyset_simple()]
                while self.accept(","):
                    items.append(self.keyset_simple())
                self.expect(")")
                if self.at(follow):
                    return Node("Tuple", t.pos, items=items)
            except P4Error:
                pass
            self.i = save
        return self.keyset_simple()

    def keyset_simple(self):
        t = self.tok
        if self.at("default") or self.at("_"):
            self.next()
            return Node("Default", t.pos)
        e = self.expression()
        if self.accept("&&&"):
            return Node("Mask", t.pos, value=e, mask=self.expression())
        if self.accept(".."):
            return Node("Range", t.pos, lo=e, hi=self.expression())
        return e

    def table_decl(self, annos):
        self.expect("table")
        name = self.ident("a table name")
        self.expect("{", "after the table name (a table declaration has no parameter list)")
        props = {}
        while not self.accept("}"):
            pa = self.annotations()
            is_const = bool(self.accept("const"))
            pn = self.ident("a table property")
            if pn.text in props:
                self.error(f"table {name.text} has property '{pn.text}' twice", pn)
            self.expect("=")
            if pn.text == "key":
                self.expect("{")
                keys = []
                while not self.accept("}"):
                    e = self.expression()
                    self.expect(":")
                    mk = self.ident("a match kind")
                    ka = self.annotations()
                    self.expect(";")
                    keys.append(Node("Key", e.pos, expr=e, match_kind=mk.text, mkpos=mk.pos, annos=ka))
                props["key"] = Node("Prop", pn.pos, value=keys, const=is_const, annos=pa)
            elif pn.text == "actions":
                self.expect("{")
                acts = []
                while not self.accept("}"):
                    aa = self.annotations()
                    an = self.ident("an action name")
                    args = self.arguments() if self.at("(") else []
                    self.expect(";")
                    acts.append(Node("ActionRef", an.pos, name=an.text, args=args, annos=aa))
                props["actions"] = Node("Prop", pn.pos, value=acts, const=is_const, annos=pa)
            elif pn.text == "entries":
                self.expect("{")
                entries = []
                while not self.accept("}"):
                    ea = self.annotations()
                    prio = None
                    if self.at("priority") and self.at("=", 1):
                        self.next()
                        self.next()
                        prio = self.expression()
                        self.expect(":")
                    ks = self.keyset(":")
                    self.expect(":")
                    an = self.ident("an action name")
                    args = self.arguments() if self.at("(") else []
                    self.annotations()
                    self.expect(";")
                    entries.append(
                        Node(
                            "Entry", ks.pos, keyset=ks, action=an.text, apos=an.pos, args=args, priority=prio, annos=ea
                        )
                    )
                props["entries"] = Node("Prop", pn.pos, value=entries, const=is_const, annos=pa)
            elif pn.text == "default_action":
                an = self.ident("an action name")
                args = self.arguments() if self.at("(") else []
                self.expect(";")
                props["default_action"] = Node(
                    "Prop",
                    pn.pos,
                    value=Node("ActionRef", an.pos, name=an.text, args=args, annos=[]),
                    const=is_const,
                    annos=pa,
                )
            else:
                e = self.expression()
                self.expect(";")
                props[pn.text] = Node("Prop", pn.pos, value=e, const=is_const, annos=pa)
        return Node("Table", name.pos, name=name.text, props=props, annos=annos)

    def instance_or_var(self, annos, top=False):
        ty = self.type_ref()
        if self.at("("):
            args = self.arguments()
            name = self.ident("an instance name")
            methods = []
            if self.accept("="):  # an initializer implementing the extern's abstract methods (TNA RegisterAction)
                self.expect("{")
                while not self.accept("}"):
                    method_annos = self.annotations()
                    methods.append(self.function_decl(method_annos))
            self.expect(";")
            return Node("Instance", name.pos, type=ty, args=args, name=name.text, annos=annos, methods=methods)
        name = self.ident("a variable name")
        init = None
        if self.accept("="):
            init = self.expression()
        self.expect(";")
        if top:
            self.error("top-level variables are not supported by softswitch (use const)", name)
        return Node("VarDecl", name.pos, name=name.text, type=ty, init=init, annos=annos)

    # ------------------------------------------------------------------ types
    def _starts_type(self, k=0):
        t = self.peek(k)
        return t.kind == "id" and (
            t.text in ("bit", "int", "bool", "varbit", "error", "string", "void", "tuple") or t.text in self.type_names
        )

    def _width(self):
        """The width in `bit<W>`, `int<W>`, `varbit<W>`: an integer, a constant's name or `(expression)`."""
        if self.accept("("):
            w = self.expression()
            self.expect(")")
            return w
        wt = self.tok
        if wt.kind == "int":
            self.next()
            return Node("Int", wt.pos, value=wt.value[0], width=None, signed=False)
        return Node("Name", wt.pos, name=self.ident("a width").text)

    def type_ref(self, allow_tvars=False):
        t = self.tok
        if t.kind != "id":
            self.error(f"syntax error: expected a type, got '{t.text}'")
        self.next()
        if t.text in ("bit", "int"):
            if self.accept("<"):
                w = self._width()
                self.expect(">")
                ty = Node("TypeBit", t.pos, width=w, signed=t.text == "int")
            elif t.text == "bit":
                ty = Node("TypeBit", t.pos, width=Node("Int", t.pos, value=1, width=None, signed=False), signed=False)
            else:
                ty = Node("TypeInfInt", t.pos)
        elif t.text == "varbit":
            self.expect("<")
            w = self._width()
            self.expect(">")
            ty = Node("TypeVarbit", t.pos, width=w)
        elif t.text == "bool":
            ty = Node("TypeBool", t.pos)
        elif t.text == "tuple":
            self.expect("<")
            args = [self.type_ref(allow_tvars)]
            while self.accept(","):
                args.append(self.type_ref(allow_tvars))
            self.expect(">")
            ty = Node("TypeTuple", t.pos, types=args)
        else:
            args = []
            if self.at("<"):
                self.next()
                while True:
                    args.append(self.type_ref(allow_tvars=True))
                    if not self.accept(","):
                        break
                self.expect(">")
            ty = Node("TypeName", t.pos, name=t.text, args=args)
        while self.at("["):
            self.next()
            size = self.expression()
            self.expect("]")
            ty = Node("TypeStack", t.pos, elem=ty, size=size)
        return ty

    # ------------------------------------------------------------------ statements
    def block(self, annos):
        t = self.expect("{")
        stmts = []
        while not self.accept("}"):
            if self.tok.kind == "eof":
                self.error("syntax error: missing '}'", t)
            stmts.append(self.statement())
        return Node("Block", t.pos, stmts=stmts, annos=annos)

    def statement(self):
        annos = self.annotations()
        t = self.tok
        if self.at("{"):
            return self.block(annos)
        if self.accept(";"):
            return Node("Empty", t.pos)
        if t.kind == "id":
            kw = t.text
            if kw == "if":
                self.next()
                self.expect("(")
                c = self.expression()
                self.expect(")")
                then = self.statement()
                els = None
                if self.accept("else"):
                    els = self.statement()
                return Node("If", t.pos, cond=c, then=then, els=els)
            if kw == "switch":
                self.next()
                self.expect("(")
                e = self.expression()
                self.expect(")")
                self.expect("{")
                cases = []
                while not self.accept("}"):
                    lt = self.tok
                    if self.accept("default"):
                        label = None
                    else:
                        label = self.expression()
                    self.expect(":")
                    body = self.block([]) if self.at("{") else None
                    cases.append(Node("Case", lt.pos, label=label, body=body))
                return Node("Switch", t.pos, expr=e, cases=cases)
            if kw == "exit":
                self.next()
                self.expect(";")
                return Node("Exit", t.pos)
            if kw in ("break", "continue"):
                self.next()
                self.expect(";")
                return Node("Break" if kw == "break" else "Continue", t.pos)
            if kw == "for":
                return self.for_statement()
            if kw == "return":
                self.next()
                e = None if self.at(";") else self.expression()
                self.expect(";")
                return Node("Return", t.pos, value=e)
            if kw == "const":
                return self.const_decl(annos)
            if kw in ("transition",):
                self.error("syntax error: 'transition' outside a parser state")
            if kw in ("action", "table"):
                self.error(f"syntax error: '{kw}' declarations belong in the control body, not in apply")
            if self._starts_type() and (
                self.peek(1).kind == "id"
                or self.at("<", 1)
                or self.at("[", 1)
                or (self.at("(", 1) and kw in self.type_names)
            ):
                if not (kw in ("error",) and self.at(".", 1)):
                    return self.instance_or_var(annos)
        s = self.assignment_or_call()
        self.expect(";")
        return s

    def assignment_or_call(self):
        """`lvalue = e`, `lvalue op= e` or a call, without the ';' (a for loop's init and update lists
        separate them with ',')."""
        t = self.tok
        e = self.expression()
        if self.accept("="):
            return Node("Assign", t.pos, lhs=e, rhs=self.expression())
        compound = self._compound_assignment()
        if compound is not None:
            rhs = self.expression()
            return Node("Assign", t.pos, lhs=e, rhs=rhs, op=compound.text, oppos=compound.pos)
        if e.kind != "Call":
            self.error("syntax error: an expression statement must be a call or an assignment", t)
        return Node("CallStmt", t.pos, call=e)

    def for_statement(self):
        """`for (init, ...; condition; update, ...) statement` or `for (T x in collection) statement`
        (the collection an `a .. b` range or a header stack)."""
        t = self.expect("for")
        self.expect("(")
        save = self.i
        self.annotations()
        if self._starts_type() and self.peek(1).kind == "id" and self.at("in", 2) or self._typed_in():
            ty = self.type_ref()
            name = self.ident("a loop variable")
            self.expect("in")
            start = self.expression()
            end = self.expression() if self.accept("..") else None
            self.expect(")")
            body = self.statement()
            return Node("ForIn", t.pos, type=ty, name=name.text, npos=name.pos, start=start, end=end, body=body)
        self.i = save
        inits = []
        while not self.at(";"):
            if self._starts_type() and (self.peek(1).kind == "id" or self.at("<", 1) or self.at("[", 1)):
                ty = self.type_ref()
                name = self.ident("a variable name")
                init = self.expression() if self.accept("=") else None
                inits.append(Node("VarDecl", name.pos, name=name.text, type=ty, init=init, annos=[]))
            else:
                inits.append(self.assignment_or_call())
            if not self.accept(","):
                break
        self.expect(";")
        condition = None if self.at(";") else self.expression()
        self.expect(";")
        updates = []
        while not self.at(")"):
            updates.append(self.assignment_or_call())
            if not self.accept(","):
                break
        self.expect(")")
        body = self.statement()
        return Node("For", t.pos, inits=inits, cond=condition, updates=updates, body=body)

    def _typed_in(self):
        """At `T x in` where T is a type with arguments (`bit<8> i in ...`)."""
        save = self.i
        try:
            self.type_ref()
            return self.tok.kind == "id" and self.at("in", 1)
        except P4Error:
            return False
        finally:
            self.i = save

    def _compound_assignment(self):
        """`lhs op= rhs` (P4_16 1.2.4): the operator token (text without '='), consumed; None otherwise.
        The statement is `lhs = lhs op rhs` with lhs evaluated once (the Assign node's `op`)."""
        t = self.tok
        if t.kind == "op" and t.text in _COMPOUND_ASSIGNMENTS:
            self.next()
            return OperatorToken(t.text[:-1], t.pos)
        if self.at(">") and self.at(">=", 1) and not self.peek(1).space:
            self.next()
            self.next()
            return OperatorToken(">>", t.pos)
        return None

    # ------------------------------------------------------------------ expressions
    def arguments(self):
        self.expect("(")
        args = []
        if self.accept(")"):
            return args
        while True:
            t = self.tok
            if t.kind == "id" and self.at("=", 1):  # a named argument: name = value
                self.next()
                self.next()
                value = Node("DontCare", self.next().pos) if self.at("_") else self.expression()
                args.append(Node("NamedArg", t.pos, name=t.text, value=value))
            elif self.at("_") and (self.at(",", 1) or self.at(")", 1)):
                args.append(Node("DontCare", self.next().pos))
            else:
                args.append(self.expression())
            if not self.accept(","):
                break
        self.expect(")")
        return args

    def expression(self):
        c = self.binary(1)
        if self.at("?"):
            q = self.next()
            a = self.expression()
            self.expect(":")
            b = self.expression()
            return Node("Cond", q.pos, cond=c, then=a, els=b)
        return c

    def _binop(self):
        t = self.tok
        if t.kind != "op":
            return None
        if t.text == "+" and self.at(":", 1):  # the '+:' of an indexed slice
            return None
        if t.text == ">":
            n = self.peek(1)
            if n.text == ">" and n.kind == "op" and not n.space:
                return ">>"
            if n.text == ">=" and not n.space:
                return None
        return t.text if t.text in _BINARY_PREC else None

    def binary(self, min_prec):
        left = self.unary()
        while True:
            op = self._binop()
            if op is None or _BINARY_PREC[op] < min_prec:
                return left
            t = self.next()
            if op == ">>":
                self.next()
            right = self.binary(_BINARY_PREC[op] + 1)
            left = Node("Binary", t.pos, op=op, left=left, right=right)

    def unary(self):
        t = self.tok
        if t.kind == "op" and t.text in ("!", "~", "-", "+"):
            self.next()
            return Node("Unary", t.pos, op=t.text, expr=self.unary())
        if self.at("(") and self._starts_type(1) and self._is_cast():
            self.next()
            ty = self.type_ref()
            self.expect(")")
            return Node("Cast", t.pos, type=ty, expr=self.unary())
        return self.postfix(self.primary())

    def _is_cast(self):
        # '(' type ')' — scan to the matching ')' and check it held only a type
        save = self.i
        try:
            self.next()
            self.type_ref()
            return self.at(")")
        except P4Error:
            return False
        finally:
            self.i = save

    def primary(self):
        t = self.tok
        if t.kind == "int":
            self.next()
            v, w, s = t.value
            return Node("Int", t.pos, value=v, width=w, signed=s)
        if t.kind == "str":
            self.next()
            return Node("Str", t.pos, value=t.value)
        if t.kind == "id":
            if t.text in ("true", "false"):
                self.next()
                return Node("Bool", t.pos, value=t.text == "true")
            self.next()
            return Node("Name", t.pos, name=t.text)
        if self.accept("("):
            e = self.expression()
            self.expect(")")
            return e
        if self.at("{") and self.peek(1).kind == "id" and self.at("=", 2):  # { name = value, ... }
            self.next()
            fields = []
            while not self.accept("}"):
                name = self.ident("a field name")
                self.expect("=")
                fields.append((name.text, self.expression()))
                if not self.accept(","):
                    self.expect("}")
                    break
            return Node("KVList", t.pos, fields=fields)
        if self.at("{") and self.at("#", 1) and self.at("}", 2):  # {#}: an invalid header
            self.next()
            self.next()
            self.next()
            return Node("InvalidHeader", t.pos)
        if self.at("{"):
            self.next()
            items = []
            if not self.accept("}"):
                while True:
                    items.append(self.expression())
                    if not self.accept(",") or self.at("}"):
                        break
                self.expect("}")
            return Node("List", t.pos, items=items)
        if t.kind == "eof":
            self.error("syntax error: unexpected end of input")
        self.error(f"syntax error: unexpected '{t.text}'")

    def postfix(self, e):
        while True:
            if self.at("."):
                self.next()
                name = self.ident("a member name")
                e = Node("Member", e.pos, expr=e, name=name.text, npos=name.pos)
            elif self.at("["):
                self.next()
                hi = self.expression()
                if self.at("+") and self.at(":", 1):  # base[low +: width]
                    self.next()
                    self.next()
                    width = self.expression()
                    self.expect("]")
                    e = Node("IndexedSlice", e.pos, expr=e, lo=hi, width=width)
                elif self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    e = Node("Slice", e.pos, expr=e, hi=hi, lo=lo)
                else:
                    self.expect("]")
                    e = Node("Index", e.pos, expr=e, index=hi)
            elif self.at("("):
                e = Node("Call", e.pos, func=e, targs=[], args=self.arguments())
            elif self.at("<") and e.kind in ("Name", "Member") and self._type_args_then_call():
                self.next()
                targs = [self.type_ref(allow_tvars=True)]
                while self.accept(","):
                    targs.append(self.type_ref(allow_tvars=True))
                self.expect(">")
                e = Node("Call", e.pos, func=e, targs=targs, args=self.arguments())
            else:
                return e

    def _type_args_then_call(self):
        save = self.i
        try:
            self.next()
            if not self._starts_type():
                return False
            self.type_ref(allow_tvars=True)
            while self.accept(","):
                self.type_ref(allow_tvars=True)
            return bool(self.accept(">")) and self.at("(")
        except P4Error:
            return False
        finally:
            self.i = save


def parse(toks):
    return Parser(toks).program()
