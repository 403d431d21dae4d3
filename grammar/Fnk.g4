// fnk grammar. The parser generated from this file only builds a parse tree;
// frontend/AstBuilder.cpp turns it into the AST, and every semantic rule lives
// in the front end, where it can report a located diagnostic.
grammar Fnk;

file        : moduleDecl? importDecl* topDecl* EOF ;
moduleDecl  : 'module' qualName ';' ;
importDecl  : 'import' qualName ';' ;
qualName    : IDENT ('.' IDENT)* ;

topDecl     : kernelDecl | fnDecl ;
kernelDecl  : 'kernel' IDENT genericParams? '(' paramList? ')' launchClause? block ;
fnDecl      : 'fn' IDENT genericParams? '(' paramList? ')' ('->' typeExpr)? block ;

genericParams : '<' genericParam (',' genericParam)* '>' ;
genericParam  : IDENT ':' IDENT ('=' constValue)? ;
constValue    : '-'? (INT | FLOAT) | 'true' | 'false' | IDENT ;
paramList   : param (',' param)* ','? ;
param       : IDENT (':' OUT? typeExpr)? ;

typeExpr    : 'tensor' '<' IDENT '>' '[' dimList ']'      # tensorType
            | 'tile' '<' IDENT '>' '[' exprList ']'        # tileType
            | IDENT                                       # namedType
            ;
dimList     : dim (',' dim)* ;
dim         : IDENT | INT ;

launchClause : 'launch' '(' namedArg (',' namedArg)* ','? ')' ;
namedArg    : IDENT '=' expr ;

block       : '{' stmt* '}' ;
stmt        : LET IDENT (':' typeExpr)? '=' expr ';'        # letStmt
            | VAR IDENT (':' typeExpr)? '=' expr ';'        # varStmt
            | IDENT op=('=' | '+=' | '-=' | '*=' | '/=') expr ';'  # assignStmt
            | 'for' IDENT 'in' 'range' '(' argList ')' block  # forStmt
            | ifStatement                                   # ifStmt
            | 'return' expr? ';'                            # returnStmt
            | block                                         # blockStmt
            | expr ';'                                      # exprStmt
            ;
ifStatement : 'if' expr block ('else' (ifStatement | block))? ;

expr        : expr '.' IDENT '(' argList? ')'                         # methodExpr
            | expr '.' IDENT                                          # memberExpr
            | expr '(' argList? ')'                                   # callExpr
            | expr '[' indexArg (',' indexArg)* ']'                   # indexExpr
            | op=('-' | '!' | '~') expr                               # unaryExpr
            | <assoc=right> expr op='**' expr                         # binaryExpr
            | expr op=('*' | '/' | '%') expr                          # binaryExpr
            | expr op=('+' | '-') expr                                # binaryExpr
            | expr op=('<<' | '>>') expr                              # binaryExpr
            | expr op=('<' | '<=' | '>' | '>=') expr                  # binaryExpr
            | expr op=('==' | '!=') expr                              # binaryExpr
            | expr op='&' expr                                        # binaryExpr
            | expr op='^' expr                                        # binaryExpr
            | expr op='|' expr                                        # binaryExpr
            | expr op='&&' expr                                       # binaryExpr
            | expr op='||' expr                                       # binaryExpr
            | 'shared' '<' IDENT '>' '[' exprList ']'                 # sharedExpr
            | '(' expr ',' exprList ','? ')'                          # tupleExpr
            | '(' expr ')'                                            # parenExpr
            | INT                                                     # intLit
            | FLOAT                                                   # floatLit
            | ('true' | 'false')                                      # boolLit
            | IDENT                                                   # nameExpr
            ;
indexArg    : expr | ':' | NONE ;
exprList    : expr (',' expr)* ;
argList     : arg (',' arg)* ','? ;
arg         : (IDENT '=')? expr ;

OUT     : 'out' ;
LET     : 'let' ;
VAR     : 'var' ;
NONE    : 'None' ;
IDENT   : [a-zA-Z_] [a-zA-Z_0-9]* ;
FLOAT   : DIGITS '.' DIGITS? EXPONENT? | DIGITS EXPONENT | '.' DIGITS EXPONENT? ;
INT     : DIGITS | '0x' [0-9a-fA-F]+ ;
fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;
WS      : [ \t\r\n]+ -> skip ;
LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
// Anything else becomes one token the parser rejects with a located error,
// so the lexer itself never has to report.
ERROR_CHAR : . ;
