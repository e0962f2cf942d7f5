"""Entity anchors for CJK text: names and other proper nouns (before this rule a CJK fact's
names gave no anchor, so a consolidation could drop them without a restore).

English proper nouns are found by their capital letter; Chinese and Japanese have none, so a
fact such as ``负责人是王小明`` ("the owner is Wang Xiaoming") gave no anchor and could be
dropped without a restore. The heuristic, precision first (a spurious anchor causes a false
restore whenever a paraphrase drops it):

* **Marked names**: the text inside 《》 (2-20 characters) and 「」『』“” (2-8 characters
  without a function word such as 的/了/是, which mark a quoted phrase): titles, product and
  project names.
* **People**: a common Chinese surname (single or compound) followed by one or two given-name
  characters, where the context marks a person — a role or verb cue before it (是, 叫, 由, 找,
  和, 跟, 联系人, 负责人, 对接人, 同事, 客户 …), or a person verb right after it (负责, 说,
  提出, 确认 …); a surname followed by an honorific (王总, 赵老师, 孙先生) and a surname after
  姓; Japanese: a kanji name before さん/様/氏/君/先生.
* **Organisations and places**: the 2-4 (organisations: 2-6) characters before a suffix such
  as 银行, 公司, 集团, 大学, 医院, 酒店, 市, 省, 区, 路 (the anchor is the stem, so ``北京市``
  and ``北京`` agree), plus a short list of major cities and well-known companies
  (``北京``, ``上海``, ``东京``, ``腾讯``, ``阿里云`` …) that are often written bare.

Measured on the corpus in ``tests/core/test_cjk_anchors.py`` (50 facts with a paraphrase each):
see that test for the figures it holds the heuristic to.
"""

from __future__ import annotations

import itertools
import re

from wm_langgraph.document.text.paths import words

__all__ = ["cjk_entities"]

_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝"
    "龚邵万钱严覃武戴莫孔向汤"
)
_COMPOUND_SURNAMES = "欧阳|司马|诸葛|上官|东方|慕容|令狐|皇甫|尉迟|长孙|夏侯|端木|公孙"
_SURNAME = f"(?:{_COMPOUND_SURNAMES}|[{_SURNAMES}])"
_HAN = r"[\u3400-\u4dbf\u4e00-\u9fff]"
# Characters that never belong to a given name: particles, pronouns, common verbs, numbers.
_NOT_NAME = set(
    "的了是在和与及或也都就还又再很太更最不没无有要会能可将把被让给对为由从向于到去来说做用"
    "这那哪其此每各某些个们我你他她它您咱谁什么吗呢吧啊呀哦嗯着过地得所以而且但却若如则因"
    "一二三四五六七八九十百千万亿两几第年月日号时分秒周天上下前后左右里外中内间等已曾正刚才"
    "负责提出确认同意认为希望需要喜欢觉得决定表示建议打算计划安排审批审核帮忙协助参加开始完成"
)
_HONORIFIC = (
    "先生|女士|小姐|老师|经理|总监|总(?![结是共体计数额量部之算会])|"
    "医生|教授|师傅|老板|主任|律师|博士"
)
# Common words that begin with a surname character; never a two-character name.
_COMMON = words(
    """周末 周一 周二 周三 周四 周五 周六 周日 周年 周期 周围 周边 周报 周会 方法 方面 方案
    方式 方向 方便 方针 高兴 高速 高级 高度 高效 高手 高峰 高端 高考 高中 文件 文档 文本
    文化 文字 文章 马上 马路 马虎 黄色 黄金 白天 白色 白板 金额 金融 金钱 何时 何处 何况
    常用 常见 常规 张开 张贴 王国 王牌 王者 陈述 陈旧 陈列 程序 程度 许多 许可 许久 于是
    万一 万元 安全 安装 安排 钱包 石头 石油 田地 向前 向后 向上 向下 曾经 任何 任务 任意
    钟头 陆续 陆地 范围 夏天 夏季 付款 付费 付出 熊猫 段落 雷达 龙头 史上 黎明 顾客 顾问
    顾虑 毛病 严格 严重 武器 莫名 余额 余下 杜绝 叶子 丁点 董事 肖像 罗列 孙子 徐徐 刘海
    江湖 汤圆 孔雀 苏醒 胡说 宋体 郑重 谢谢 唐朝 韩国 林业 邓林 于此 方才 高原 金属 林子
    毛巾 白菜 黄昏 龙虾 贺卡 雷声 叶片 石块 向导 夏令 严肃 余地 程控 钱财 杨树 朱红"""
)
_CUE = (
    "叫做|名叫|名为|叫|是|由|找|联系|和|跟|与|同|给|请|让|问|交给|通知|告诉|"
    "负责人|联系人|对接人|审批人|经理|主管|老板|同事|客户|用户|作者|朋友|同学|老师|"
    "[:：，,、（(]"
)
_PERSON_VERB = (
    "负责|说|提出|提的|确认|同意|认为|希望|需要|要求|建议|觉得|决定|表示|审批|审核|会|要|将|"
    "已经|来|去|住|喜欢|的意见|帮忙|协助|参加|是"
)
_GIVEN = f"(?:{_HAN}{{1,2}})"
_PERSON_AFTER_CUE_RE = re.compile(f"(?:{_CUE})[ \\t]*(?P<name>{_SURNAME}{_GIVEN}{_HAN}?)")
_NAMED_RE = re.compile(f"(?:叫做|名叫|名为|叫|称为|昵称)[ \\t]*(?P<name>{_HAN}{{2,4}})")
_PERSON_BEFORE_VERB_RE = re.compile(
    f"(?:^|(?<=[\\s,，。；;：:、（(）)\\-*的]))(?P<name>{_SURNAME}{_GIVEN})(?={_PERSON_VERB})"
)
_PERSON_HONORIFIC_RE = re.compile(f"(?P<name>{_SURNAME}{_HAN}{{0,2}}?)(?P<title>{_HONORIFIC})")
_SURNAME_ONLY_RE = re.compile(f"姓(?P<name>{_SURNAME})")
_JA_NAME_RE = re.compile(r"(?P<name>[\u4e00-\u9fff]{1,4})(?:さん|様|さま|氏|君|くん|先生)")
_QUOTED_RE = re.compile(
    r"《([^》\n]{2,20})》|「([^」\n]{2,8})」|『([^』\n]{2,8})』|“([^”\n]{2,8})”"
)
# Curly quotes also mark phrases in prose ("真正新增的条目"); a quoted name has no function word.
_PHRASE_CHARS_RE = re.compile("[的了是被而和与在把将都也就不没个地得着过吗呢必须要会，。、]")
_ORG_SUFFIX = (
    "有限公司|股份公司|公司|集团|银行|大学|学院|中学|小学|医院|酒店|宾馆|饭店|机场|火车站|车站|"
    "研究所|研究院|科技|大厦|广场|中心"
)
_STEM_STOP = set("在的是于去到从和与住来自向给把被让对为由及或了我你他她们这那个一有要会将位读上就")
_GENERIC_STEMS = words(
    """航空 保险 物流 快递 证券 电力 汽车 地产 咨询 投资 贸易 医药 教育 文化 传媒 广告 建筑
    出版 能源 通信 服务 管理 这家 那家 一家 本地 当地 附属 我们 他们 市场 数据 客服 技术
    科技 网络 软件 电子 信息 研发 产品 运营 财务 人事 行政 销售"""
)
_GENERIC_TAIL_RE = re.compile("(?:技术|科技|网络|信息|软件|电子|实业|控股|国际|中国)+$")
_ORG_RE = re.compile(f"(?P<stem>{_HAN}{{2,8}}?)(?:{_ORG_SUFFIX})")
_PLACE_RE = re.compile(
    f"(?P<stem>{_HAN}{{2,6}}?)(?:[省市县区镇村](?![别域场民长级内外里中委政间段块分])|(?:路|街|大道)(?=[0-9０-９一二三四五六七八九十]))"
)
_WELL_KNOWN = (
    "北京|上海|广州|深圳|杭州|成都|南京|武汉|西安|重庆|天津|苏州|厦门|青岛|大连|长沙|郑州|沈阳|"
    "香港|澳门|台北|东京|大阪|京都|横滨|名古屋|札幌|福冈|首尔|釜山|纽约|伦敦|巴黎|柏林|新加坡|"
    "腾讯|阿里巴巴|阿里云|百度|华为|小米|字节跳动|京东|美团|网易|国航|东航|南航|微信|支付宝|淘宝"
)
_WELL_KNOWN_RE = re.compile(_WELL_KNOWN)


def _name(candidate: str, after: str = "") -> str:
    """Trim a surname + given-name match where a character cannot belong to a given name.

    A second given-name character is kept only when what follows it cannot continue a word
    (a boundary, punctuation, or a character that is never part of a name): in ``李明确认``
    the name is ``李明``, in ``王小明负责`` it is ``王小明``.
    """
    surname = re.match(_SURNAME, candidate)
    if surname is None:
        return ""
    head, given = candidate[: surname.end()], candidate[surname.end() :]
    kept = ""
    for ch in given[:2]:
        if ch in _NOT_NAME:
            break
        kept += ch
    if len(kept) == 2:
        rest = (given[2:] + after)[:2]
        if (
            rest
            and re.match(_HAN, rest)
            and rest[0] not in _NOT_NAME
            and not re.match(_HONORIFIC, rest)
        ):
            kept = kept[:1]
    if kept and re.fullmatch(_HONORIFIC, kept):
        kept = ""
    name = head + kept if kept else ""
    return "" if name in _COMMON else name


def _stem(stem: str, limit: int) -> str:
    """The trailing run of ``stem`` after its last stop character, generic tails such as 技术
    removed (2 to ``limit`` characters, else ``""``)."""
    cut = max((i for i, ch in enumerate(stem) if ch in _STEM_STOP), default=-1)
    rest = _GENERIC_TAIL_RE.sub("", stem[cut + 1 :])
    if not 2 <= len(rest) <= limit or rest in _COMMON or rest in _GENERIC_STEMS:
        return ""
    if rest[0] in "一二三四五六七八九十百千万两几多每各该此本":
        return ""
    return rest


def cjk_entities(text: str) -> set[str]:
    """The CJK entity anchors of ``text`` (module docstring)."""
    if not re.search(_HAN, text):
        return set()
    found: set[str] = set()
    for match in _QUOTED_RE.finditer(text):
        inner = next(group for group in match.groups() if group)
        if not match.group().startswith("《") and _PHRASE_CHARS_RE.search(inner):
            continue
        found.add(inner.strip().casefold())
    for regex in (_PERSON_AFTER_CUE_RE, _PERSON_BEFORE_VERB_RE):
        for match in regex.finditer(text):
            name = _name(match["name"], text[match.end() : match.end() + 2])
            if name:
                found.add(name)
    for match in _NAMED_RE.finditer(text):
        name = "".join(itertools.takewhile(lambda ch: ch not in _NOT_NAME, match["name"]))
        if len(name) >= 2:
            found.add(name)
    for match in _PERSON_HONORIFIC_RE.finditer(text):
        given = match["name"]
        name = _name(given) if len(given) > 1 else ""
        found.add(name or given + match["title"])
    for match in _SURNAME_ONLY_RE.finditer(text):
        found.add(match["name"])
    for match in _JA_NAME_RE.finditer(text):
        found.add(match["name"])
    for regex, limit in ((_ORG_RE, 6), (_PLACE_RE, 4)):
        for match in regex.finditer(text):
            stem = _stem(match["stem"], limit)
            if stem:
                found.add(stem)
    found.update(_WELL_KNOWN_RE.findall(text))
    return found
